use super::*;
use crate::project::parse;

fn file(text: &str) -> ProjectFile {
    parse("project.yaml", text.as_bytes()).expect("a valid file")
}

fn registry(found: &[(&str, Option<&str>)], candidates: &[&str]) -> RegisteredRelations {
    RegisteredRelations {
        found: found
            .iter()
            .map(|(n, l)| ((*n).to_owned(), l.map(str::to_owned)))
            .collect(),
        candidates: candidates.iter().map(|c| (*c).to_owned()).collect(),
        dependents: BTreeMap::new(),
    }
}

fn notes(text: &str, registered: &RegisteredRelations, mode: RelationsMode) -> Vec<String> {
    let parsed = file(text);
    let local = declared([&parsed]);
    dependency_notes("project.yaml", &parsed, text, &local, registered, mode)
        .into_iter()
        .map(|n| format!("{} {}", if n.failure { "F" } else { "W" }, n.problem))
        .collect()
}

#[test]
fn an_unknown_dependency_should_name_the_nearest_projects() {
    let text = "name: cart-api\nowner: t\ndepends_on: [stock-api, chekout-api]\n";
    let registered = registry(
        &[("stock-api", None)],
        &["checkout-api", "stock-api", "billing"],
    );
    assert_eq!(
        notes(text, &registered, RelationsMode::Require),
        ["F project.yaml:3:25: depends_on[1]: no project \"chekout-api\" (did you mean checkout-api?)"]
    );
    assert_eq!(
        notes(text, &registered, RelationsMode::Warn),
        ["W project.yaml:3:25: depends_on[1]: no project \"chekout-api\" (did you mean checkout-api?)"]
    );
    assert!(notes(text, &registered, RelationsMode::Off).is_empty());
}

#[test]
fn a_dependency_on_a_project_of_the_same_file_should_resolve_within_it() {
    let text = "projects:\n  - name: a\n    owner: t\n    depends_on: [b]\n  - name: b\n    owner: t\n    depends_on: [zzz]\n";
    assert_eq!(
        notes(text, &registry(&[], &[]), RelationsMode::Require),
        ["F project.yaml:7:18: projects[1].depends_on[0]: no project \"zzz\""]
    );
}

#[test]
fn a_production_project_on_a_deprecated_one_should_be_warned_never_failed() {
    let text = "name: a\nowner: t\nlifecycle: production\ndepends_on: [old, new]\n";
    let registered = registry(
        &[("old", Some("deprecated")), ("new", Some("production"))],
        &[],
    );
    assert_eq!(
        notes(text, &registered, RelationsMode::Require),
        ["W project.yaml:4:14: depends_on[0]: \"old\" is deprecated; a is in production and depends on it"]
    );
    let experimental = "name: a\nowner: t\nlifecycle: experimental\ndepends_on: [old]\n";
    assert!(notes(experimental, &registered, RelationsMode::Require).is_empty());
}

#[test]
fn only_the_first_unknown_names_should_get_suggestions() {
    let names: Vec<String> = (0..50).map(|i| format!("svc-{i:02}x")).collect();
    let text = format!("name: a\nowner: t\ndepends_on: [{}]\n", names.join(", "));
    let candidates: Vec<String> = (0..50).map(|i| format!("svc-{i:02}")).collect();
    let registered = RegisteredRelations {
        candidates,
        ..RegisteredRelations::default()
    };
    let found = notes(&text, &registered, RelationsMode::Require);
    assert_eq!(found.len(), 50);
    let suggested = found.iter().filter(|n| n.contains("did you mean")).count();
    assert_eq!(suggested, MAX_SUGGESTED);
    assert!(found.iter().all(|n| n.len() < 200), "{found:?}");
}

#[test]
fn the_dependents_message_should_name_the_visible_and_count_the_others() {
    let all = Dependents {
        named: vec![
            "cart-api".into(),
            "orders-api".into(),
            "returns-worker".into(),
        ],
        total: 3,
    };
    assert_eq!(
        dependents_message("checkout-api", &all),
        "3 projects depend on checkout-api: cart-api, orders-api, returns-worker"
    );
    let some = Dependents {
        named: vec!["cart-api".into()],
        total: 3,
    };
    assert_eq!(
        dependents_message("checkout-api", &some),
        "3 projects depend on checkout-api: cart-api and 2 projects in other repositories"
    );
    let none = Dependents {
        named: Vec::new(),
        total: 1,
    };
    assert_eq!(
        dependents_message("checkout-api", &none),
        "1 project depends on checkout-api: 1 project in other repositories"
    );
    let many = Dependents {
        named: (0..1000).map(|i| format!("p{i}")).collect(),
        total: 1500,
    };
    let message = dependents_message("x", &many);
    assert!(
        message.ends_with("p19 and 980 more and 500 projects in other repositories"),
        "{message}"
    );
}

#[test]
fn a_renamed_project_should_be_noted_on_its_new_name_line() {
    let text = "owner: t\nname: checkout-svc\n";
    let head = file(text);
    let mut registered = RegisteredRelations::default();
    registered.dependents.insert(
        "checkout-api".into(),
        Dependents {
            named: vec!["cart-api".into()],
            total: 1,
        },
    );
    let removed = ["checkout-api".to_owned()];
    let found = removal_notes(
        "project.yaml",
        Some((&head, text)),
        &removed,
        &[],
        &registered,
        RelationsMode::Warn,
    );
    assert_eq!(found.len(), 1);
    assert!(!found[0].failure);
    assert_eq!(
        found[0].problem.to_string(),
        "project.yaml:2:7: name: 1 project depends on checkout-api: cart-api"
    );
    let gone = removal_notes(
        "project.yaml",
        None,
        &removed,
        &[],
        &registered,
        RelationsMode::Require,
    );
    assert!(gone[0].failure && gone[0].problem.line.is_none());
    let mut verdict = Verdict {
        conclusion: "success",
        title: "adds 0, changes 0, removes 1".into(),
        summary: String::new(),
        annotations: Vec::new(),
    };
    annotate(&mut verdict, &gone, RelationsMode::Require);
    assert_eq!(verdict.conclusion, "failure");
    assert!(verdict.annotations.is_empty(), "no line, no annotation");
    assert!(verdict
        .summary
        .contains("1 project depends on checkout-api"));
}
