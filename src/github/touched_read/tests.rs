use super::*;

fn asked() -> Asked<'static> {
    Asked {
        index: 0,
        id: RepoId(7),
        node_id: "R_7",
        default_branch: "main",
        before: "a1".into(),
        after: "b2".into(),
        paths: vec![
            "services/api/project.yaml".into(),
            "services/old/project.yaml".into(),
        ],
    }
}

#[test]
fn the_query_should_ask_each_touched_path_at_the_push_commit() {
    let (query, variables) = touched_query(&[asked()]);
    assert!(query.contains("r0: node(id: $i0)"), "{query}");
    assert!(query.contains("at: object(oid: $c0)"), "{query}");
    assert!(query.contains("f1: file(path: $p0_1)"), "{query}");
    assert!(query.contains("$p0_1: String!"), "{query}");
    assert_eq!(query.matches('{').count(), query.matches('}').count());
    assert_eq!(variables["c0"], "b2");
    assert_eq!(variables["p0_0"], "services/api/project.yaml");
}

#[test]
fn the_answer_should_tell_files_found_and_gone_at_the_push_commit() {
    let node = json!({
        "id": "R_7", "databaseId": 7, "name": "mono", "owner": {"login": "acme"},
        "isArchived": false, "url": "https://github.com/acme/mono",
        "defaultBranchRef": {"name": "main"},
        "at": {
            "f0": {"mode": 33188, "object": {"byteSize": 6, "isBinary": false, "isTruncated": false, "text": "name: a"}},
            "f1": null,
        },
    });
    let Some(Observed::Present { repo, file }) = observe(&node, InstallationId(1), &asked()) else {
        panic!("no observation");
    };
    assert_eq!(repo.full_name(), "acme/mono");
    let FileState::Touched(touched) = file else {
        panic!("not a partial read: {file:?}");
    };
    let TouchedFiles {
        before,
        sha,
        files,
        gone,
    } = *touched;
    assert_eq!((before.as_str(), sha.as_str()), ("a1", "b2"));
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "services/api/project.yaml");
    assert_eq!(gone, ["services/old/project.yaml"]);

    // Another repository, another default branch, or an unknown commit:
    // only a full read can say.
    let mut other = node.clone();
    other["databaseId"] = json!(8);
    let mut branch = node.clone();
    branch["defaultBranchRef"]["name"] = json!("trunk");
    let mut unknown = node.clone();
    unknown["at"] = Value::Null;
    for node in [other, branch, unknown] {
        assert!(
            observe(&node, InstallationId(1), &asked()).is_none(),
            "{node}"
        );
    }
}
