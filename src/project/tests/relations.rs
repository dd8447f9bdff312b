//! The rules of `depends_on` and `system` (docs/contract.md#relations): names like a
//! project's, at most 50 dependencies, each once, none the project itself.

use super::{problems, valid};

#[test]
fn depends_on_and_system_should_be_read_in_both_shapes() {
    let one = valid("name: a\nowner: t\ndepends_on: [b, c]\nsystem: shop\n");
    let fields = &one.projects[0].fields;
    assert_eq!(fields.depends_on, ["b", "c"]);
    assert_eq!(fields.system.as_deref(), Some("shop"));
    let several = valid(
        "projects:\n  - name: a\n    owner: t\n    depends_on: [b]\n    system: shop\n  - name: b\n    owner: t\n    depends_on: [a]\n",
    );
    assert_eq!(several.projects[0].fields.depends_on, ["b"]);
    assert_eq!(several.projects[1].fields.depends_on, ["a"]);
    assert_eq!(several.projects[1].fields.system, None);
}

#[test]
fn depends_on_should_be_empty_and_system_null_when_left_out() {
    let file = valid("name: a\nowner: t\ndepends_on:\nsystem: ~\n");
    assert!(file.projects[0].fields.depends_on.is_empty());
    assert_eq!(file.projects[0].fields.system, None);
}

#[test]
fn depends_on_should_be_at_most_50() {
    let names: Vec<String> = (0..51).map(|i| format!("p{i}")).collect();
    let yaml = format!("name: a\nowner: t\ndepends_on: [{}]\n", names.join(", "));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:3:13: depends_on: at most 50 depends_on are allowed, found 51"]
    );
    let fifty = format!(
        "name: a\nowner: t\ndepends_on: [{}]\n",
        names[..50].join(", ")
    );
    assert_eq!(valid(&fifty).projects[0].fields.depends_on.len(), 50);
}

#[test]
fn depends_on_should_name_projects_like_a_name() {
    assert_eq!(
        problems("name: a\nowner: t\ndepends_on: [b, Checkout, '-x', [c]]\n"),
        [
            "project.yaml:3:17: depends_on[1]: must contain only lowercase letters, digits and '-', found \"Checkout\"",
            "project.yaml:3:27: depends_on[2]: must start and end with a lowercase letter or digit, found \"-x\"",
            "project.yaml:3:33: depends_on[3]: must be a string, found a list",
        ]
    );
}

#[test]
fn depends_on_should_not_list_a_name_twice() {
    assert_eq!(
        problems("name: a\nowner: t\ndepends_on: [b, c, b]\n"),
        ["project.yaml:3:20: depends_on[2]: \"b\" is already listed at depends_on[0]"]
    );
}

#[test]
fn a_project_should_never_depend_on_itself() {
    assert_eq!(
        problems("owner: t\ndepends_on: [b, a]\nname: a\n"),
        ["project.yaml:2:17: depends_on[1]: a project cannot depend on itself (\"a\")"]
    );
    // In the several-projects shape, each project's own name counts.
    assert_eq!(
        problems("projects:\n  - name: a\n    owner: t\n    depends_on: [b]\n  - name: b\n    owner: t\n    depends_on: [b]\n"),
        ["project.yaml:7:18: projects[1].depends_on[0]: a project cannot depend on itself (\"b\")"]
    );
}

#[test]
fn depends_on_should_be_a_list() {
    assert_eq!(
        problems("name: a\nowner: t\ndepends_on: b\n"),
        ["project.yaml:3:13: depends_on: must be a list, found a string"]
    );
}

#[test]
fn system_should_be_like_a_name() {
    assert_eq!(
        problems("name: a\nowner: t\nsystem: Shop Front\n"),
        ["project.yaml:3:9: system: must contain only lowercase letters, digits and '-', found \"Shop Front\""]
    );
    assert_eq!(
        problems("name: a\nowner: t\nsystem: [shop]\n"),
        ["project.yaml:3:9: system: must be a string, found a list"]
    );
}
