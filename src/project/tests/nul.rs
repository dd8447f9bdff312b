//! A NUL in a project file, written as is or as a YAML escape: PostgreSQL
//! cannot store it, so the file is invalid at the NUL's spot.

use crate::project::*;

fn problems(yaml: &[u8]) -> Vec<String> {
    match parse("project.yaml", yaml) {
        Ok(file) => panic!("expected problems, parsed {file:?}"),
        Err(problems) => problems.0.iter().map(Problem::to_string).collect(),
    }
}

const MESSAGE: &str = "file: contains a NUL character (U+0000), which a project file may not hold";

#[test]
fn an_escaped_nul_in_a_value_should_be_invalid_at_the_value() {
    let found = problems(b"name: a\nowner: b\ndescription: \"a\\0b\"\n");
    assert_eq!(found, vec![format!("project.yaml:3:14: {MESSAGE}")]);
}

#[test]
fn every_escape_of_nul_should_be_refused() {
    for escape in ["\\x00", "\\u0000", "\\U00000000"] {
        let yaml = format!("name: a\nowner: \"team{escape}\"\n");
        let found = problems(yaml.as_bytes());
        assert_eq!(
            found,
            vec![format!("project.yaml:2:8: {MESSAGE}")],
            "{escape}"
        );
    }
}

#[test]
fn a_nul_in_a_key_or_a_label_should_be_refused() {
    let found = problems(b"name: a\nowner: b\nlabels:\n  \"k\\0\": v\n  tier: \"\\0\"\n");
    assert_eq!(
        found,
        vec![
            format!("project.yaml:4:3: {MESSAGE}"),
            format!("project.yaml:5:9: {MESSAGE}"),
        ]
    );
}

#[test]
fn a_raw_nul_byte_should_be_invalid_at_its_line_and_column() {
    let found = problems(b"name: a\nowner: b\ndescription: x\0y\n");
    assert_eq!(found, vec![format!("project.yaml:3:15: {MESSAGE}")]);
}

#[test]
fn many_nuls_should_be_cut_at_the_problem_bound() {
    let mut yaml = String::from("name: a\nowner: b\ntags:\n");
    for _ in 0..150 {
        yaml.push_str("  - \"\\0\"\n");
    }
    let found = problems(yaml.as_bytes());
    assert_eq!(found.len(), MAX_PROBLEMS + 1);
    assert_eq!(
        found[MAX_PROBLEMS],
        "project.yaml: file: … and 50 more problems"
    );
}

#[test]
fn a_file_without_nul_should_still_parse() {
    let parsed = parse(
        "project.yaml",
        b"name: a\nowner: b\ndescription: \"a\\tb\"\n",
    );
    assert!(parsed.is_ok(), "{parsed:?}");
}
