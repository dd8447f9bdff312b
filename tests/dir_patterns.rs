//! Several project files per repository, bad input through the real binary
//! on a `dir:` folder: a link among the matching paths, a folder named like
//! a project file, a pattern that matches thousands of files, a tree too
//! large to search. Each gives a clear error and keeps what was registered.

use crate::support;

use std::path::Path;
use std::time::Duration;

use roster::source::dir::NOT_REGULAR;
use serde_json::Value;
use support::http::get;
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(60);
/// Written only outside the source folder: it must never show.
const SECRET: &str = "s3cr3t-91c2e0";
const PATTERNS: &str = "project.yaml,services/*/project.yaml,deep/**/project.yaml";

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// A service file declaring `name`.
fn service(repo: &Path, path: &str, name: &str) {
    write(
        &repo.join(path),
        &format!("name: {name}\nowner: team-{name}\n"),
    );
}

async fn repo(roster: &Roster, name: &str) -> Value {
    get(&roster.url(&format!("/api/v1/repos/local/{name}")))
        .await
        .expect("repo")
        .json()
}

async fn wait_status(roster: &Roster, name: &str, status: &str) -> Value {
    eventually(&format!("{name} {status}"), LIMIT, || async {
        let r = repo(roster, name).await;
        (r["status"] == status).then_some(r)
    })
    .await
}

#[tokio::test]
async fn bad_files_among_several_should_turn_the_repository_invalid_and_keep_its_entries() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (org, outside) = (dir.path().join("org"), dir.path().join("outside"));
    write(
        &outside.join("project.yaml"),
        &format!("name: {SECRET}\nowner: {SECRET}\n"),
    );
    for name in ["linked", "folder", "thousands", "huge"] {
        service(
            &org.join(name),
            "services/a/project.yaml",
            &format!("{name}-a"),
        );
        service(
            &org.join(name),
            "services/b/project.yaml",
            &format!("{name}-b"),
        );
    }
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        ("ROSTER_PROJECT_FILES", PATTERNS.to_string()),
    ];
    let roster = Roster::start(&env, dir.path()).await;
    for name in ["linked", "folder", "thousands", "huge"] {
        let synced = wait_status(&roster, name, "synced").await;
        assert_eq!(
            synced["projects"],
            serde_json::json!([format!("{name}-a"), format!("{name}-b")])
        );
    }
    // Its page names the files it read, not the patterns looked for.
    let page = get(&roster.url("/repos/local/linked"))
        .await
        .expect("page")
        .body;
    assert!(
        page.contains("Project files read</dt><dd><code>services/a/project.yaml</code>, <code>services/b/project.yaml</code></dd>"),
        "{page}"
    );
    assert!(!page.contains(PATTERNS), "{page}");

    // A link among the matching paths (to a file outside the folder), and
    // a folder where a project file would be.
    std::fs::remove_file(org.join("linked/services/b/project.yaml")).expect("rm");
    std::os::unix::fs::symlink(
        outside.join("project.yaml"),
        org.join("linked/services/b/project.yaml"),
    )
    .expect("symlink");
    std::fs::remove_file(org.join("folder/services/b/project.yaml")).expect("rm");
    std::fs::create_dir_all(org.join("folder/services/b/project.yaml/x")).expect("mkdir");
    // A pattern matching thousands of files (past the 500 a repository may
    // have), and a tree too large to search under `**`.
    // Both are built beside the folder and moved in at once, so the
    // watcher sees one change, not thousands.
    let staging = dir.path().join("staging");
    for n in 0..2_000 {
        service(
            &staging.join("thousands"),
            &format!("{n}/project.yaml"),
            &format!("t{n}"),
        );
    }
    let vendor = staging.join("huge/vendor");
    std::fs::create_dir_all(&vendor).expect("mkdir");
    for n in 0..=100_000 {
        std::fs::File::create(vendor.join(format!("f{n}"))).expect("create");
    }
    std::fs::rename(staging.join("thousands"), org.join("thousands/deep")).expect("move");
    std::fs::rename(staging.join("huge"), org.join("huge/deep")).expect("move");

    for (name, error) in [
        (
            "linked",
            format!("services/b/project.yaml: file: {NOT_REGULAR}"),
        ),
        (
            "folder",
            format!("services/b/project.yaml: file: {NOT_REGULAR}"),
        ),
        ("thousands", "file: more than 500 project files".to_owned()),
        (
            "huge",
            "file: more than 100000 files and folders to search for project files".to_owned(),
        ),
    ] {
        let invalid = wait_status(&roster, name, "invalid").await;
        assert_eq!(invalid["error"], error, "{name}");
        // Entries kept as they were, nothing from outside the folder.
        assert_eq!(
            invalid["projects"],
            serde_json::json!([format!("{name}-a"), format!("{name}-b")]),
            "{name}"
        );
        assert!(!invalid.to_string().contains(SECRET), "{invalid}");
    }
    let kept = get(&roster.url("/api/v1/projects/linked-b"))
        .await
        .expect("entry");
    assert_eq!(kept.status, 200);
    assert_eq!(kept.json()["path"], "services/b/project.yaml");
    let all = get(&roster.url("/api/v1/projects?limit=1000"))
        .await
        .expect("projects");
    assert!(!all.body.contains(SECRET));
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}
