//! The bounds of docs/contract.md#bounds on one file: at most 100 problems then one line
//! counting the rest, at most 100 projects, and no problem line that grows
//! with the file.

use crate::project::*;

fn problems(yaml: &str) -> Vec<String> {
    match parse("project.yaml", yaml.as_bytes()) {
        Ok(file) => panic!("expected problems, parsed {file:?}"),
        Err(problems) => problems.0.iter().map(Problem::to_string).collect(),
    }
}

/// A valid project followed by `count` unknown keys, one per line from line 3.
fn unknown_keys(count: usize) -> String {
    let mut yaml = String::from("name: a\nowner: b\n");
    for n in 0..count {
        yaml.push_str(&format!("k{n}: 1\n"));
    }
    yaml
}

fn unknown_key_line(n: usize) -> String {
    format!(
        "project.yaml:{}:1: k{n}: unknown field (expected one of {})",
        n + 3,
        super::fields::file_keys().join(", ")
    )
}

/// `projects:` listing `count` valid projects.
fn projects(count: usize) -> String {
    let mut yaml = String::from("projects:\n");
    for n in 0..count {
        yaml.push_str(&format!("  - name: p{n}\n    owner: team\n"));
    }
    yaml
}

/// The attack of docs/contract.md#bounds: a 256 KiB flow list of empty projects, each of
/// which misses both required fields.
pub(crate) fn empty_projects_attack() -> String {
    let mut yaml = String::from("projects: [{}");
    while yaml.len() + ",{}]\n".len() <= MAX_FILE_BYTES {
        yaml.push_str(",{}");
    }
    yaml.push_str("]\n");
    yaml
}

#[test]
fn a_hundred_problems_should_all_be_reported() {
    let found = problems(&unknown_keys(MAX_PROBLEMS));
    let expected: Vec<String> = (0..MAX_PROBLEMS).map(unknown_key_line).collect();
    assert_eq!(found, expected);
}

#[test]
fn past_a_hundred_problems_one_line_should_count_the_rest() {
    let found = problems(&unknown_keys(MAX_PROBLEMS + 1));
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    assert_eq!(found[99], unknown_key_line(99));
    assert_eq!(found[100], "project.yaml: file: … and 1 more problems");

    let found = problems(&unknown_keys(5000));
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    let expected: Vec<String> = (0..MAX_PROBLEMS).map(unknown_key_line).collect();
    assert_eq!(found[..MAX_PROBLEMS], expected[..]);
    assert_eq!(found[100], "project.yaml: file: … and 4900 more problems");
}

#[test]
fn the_first_hundred_problems_should_be_the_first_in_the_file_whatever_the_walk_order() {
    // Duplicate names are found after the whole file was read, but the
    // missing owners come first in the file: they are the ones kept.
    let mut yaml = String::from("projects:\n");
    for _ in 0..90 {
        yaml.push_str("  - name: same\n");
    }
    let found = problems(&yaml);
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    assert_eq!(
        found[0],
        "project.yaml:2:5: projects[0].owner: missing required field"
    );
    assert_eq!(
        found[1],
        "project.yaml:3:5: projects[1].owner: missing required field"
    );
    assert_eq!(
        found[2],
        "project.yaml:3:11: projects[1].name: duplicate name \"same\" (already declared by projects[0].name at line 2)"
    );
    // 90 missing owners, 89 duplicates; the last kept is line 52's owner.
    assert_eq!(
        found[99],
        "project.yaml:52:5: projects[50].owner: missing required field"
    );
    assert_eq!(found[100], "project.yaml: file: … and 79 more problems");
}

#[test]
fn a_hundred_projects_should_be_accepted() {
    let file = match parse("project.yaml", projects(MAX_PROJECTS).as_bytes()) {
        Ok(file) => file,
        Err(problems) => panic!("refused: {problems}"),
    };
    assert_eq!(file.projects.len(), MAX_PROJECTS);
    assert_eq!(file.projects[99].name.as_str(), "p99");
}

#[test]
fn a_hundred_and_one_projects_should_be_refused() {
    assert_eq!(
        problems(&projects(MAX_PROJECTS + 1)),
        ["project.yaml:2:3: projects: at most 100 entries"]
    );
}

#[test]
fn the_empty_projects_attack_should_be_refused_with_101_lines() {
    let yaml = empty_projects_attack();
    assert!(yaml.len() <= MAX_FILE_BYTES && yaml.len() > MAX_FILE_BYTES - 4);
    let found = problems(&yaml);
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    assert_eq!(found[0], "project.yaml:1:11: projects: at most 100 entries");
    assert_eq!(
        found[1],
        "project.yaml:1:12: projects[0].name: missing required field"
    );
    assert_eq!(
        found[2],
        "project.yaml:1:12: projects[0].owner: missing required field"
    );
    // Only the first 100 items are read: 200 missing fields and the bound.
    assert_eq!(found[100], "project.yaml: file: … and 101 more problems");
    let text = match parse("project.yaml", yaml.as_bytes()) {
        Err(problems) => problems.to_string(),
        Ok(_) => unreachable!("refused above"),
    };
    assert!(text.len() < 8 * 1024, "{} bytes", text.len());
}

#[test]
fn a_long_text_quoted_in_a_problem_should_be_cut() {
    let name = "A".repeat(10_000);
    // A key this long must be explicit (`? key`) to be YAML at all.
    let found = problems(&format!(
        "name: a\nlifecycle: {name}\nowner: b\n? {name}\n: 1\n"
    ));
    assert_eq!(found.len(), 2);
    let message = found[0]
        .split_once(": lifecycle: ")
        .map(|(_, message)| message)
        .unwrap_or_default();
    assert_eq!(message.chars().count(), 500, "{message}");
    assert!(
        message.starts_with("must be one of experimental, production, deprecated, found \"AAA"),
        "{message}"
    );
    assert!(message.ends_with("AAA…"), "{message}");
    let field = found[1]
        .strip_prefix("project.yaml:4:3: ")
        .and_then(|rest| rest.split_once(": unknown field"))
        .map(|(field, _)| field)
        .unwrap_or_default();
    assert_eq!(field, format!("{}…", "A".repeat(199)));
}

#[test]
fn a_short_text_should_not_be_cut() {
    assert_eq!(clip("abc".into(), 3), "abc");
    assert_eq!(clip("abcd".into(), 3), "ab…");
    assert_eq!(clip("éééé".into(), 3), "éé…");
}

fn accepted(yaml: &str) -> ProjectFile {
    match parse("project.yaml", yaml.as_bytes()) {
        Ok(file) => file,
        Err(problems) => panic!("expected a valid file, got:\n{problems}"),
    }
}

#[test]
fn a_label_should_have_a_key_of_at_most_63_and_a_value_of_at_most_256_characters() {
    let (key, value) = ("k".repeat(63), "é".repeat(256));
    let file = accepted(&format!("name: a\nowner: b\nlabels:\n  {key}: {value}\n"));
    assert_eq!(file.projects[0].fields.labels.get(&key), Some(&value));
    assert_eq!(
        problems(&format!(
            "name: a\nowner: b\nlabels:\n  {}: x\n",
            "k".repeat(64)
        )),
        ["project.yaml:4:3: labels: a key must be at most 63 characters, found 64"]
    );
    assert_eq!(
        problems(&format!(
            "name: a\nowner: b\nlabels:\n  tier: {}\n",
            "v".repeat(257)
        )),
        ["project.yaml:4:9: labels.tier: must be at most 256 characters, found 257"]
    );
}

#[test]
fn a_link_should_have_a_title_of_at_most_200_and_a_url_of_at_most_2000_characters() {
    let title = "t".repeat(200);
    let url = format!("https://example.com/{}", "p".repeat(2000 - 20));
    let file = accepted(&format!(
        "name: a\nowner: b\nlinks:\n  - title: {title}\n    url: {url}\n"
    ));
    assert_eq!(file.projects[0].fields.links[0].url.chars().count(), 2000);
    assert_eq!(
        problems(&format!(
            "name: a\nowner: b\nlinks:\n  - title: {title}t\n    url: {url}p\n"
        )),
        [
            "project.yaml:4:12: links[0].title: must be at most 200 characters, found 201",
            "project.yaml:5:10: links[0].url: must be at most 2000 characters, found 2001",
        ]
    );
}
