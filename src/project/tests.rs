//! The rules of docs/contract.md#the-project-file, one test (at least) per rule, each checking the
//! exact line a user would read.

mod bounds;
mod nul;
mod relations;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;

/// `lines` with `{KNOWN}` standing for the list of fields an unknown key is
/// told about: the list is checked once, beside the table of fields, so a
/// new field does not rewrite these tests.
fn known(lines: &[&str]) -> Vec<String> {
    let listed = format!("(expected one of {})", fields::file_keys().join(", "));
    lines
        .iter()
        .map(|l| l.replace("{KNOWN}", &listed))
        .collect()
}

/// The problems of `yaml` as printed, one string per problem.
fn problems(yaml: &str) -> Vec<String> {
    problems_of(yaml.as_bytes())
}

fn problems_of(bytes: &[u8]) -> Vec<String> {
    match parse("project.yaml", bytes) {
        Ok(file) => panic!("expected problems, parsed {file:?}"),
        Err(problems) => problems.0.iter().map(Problem::to_string).collect(),
    }
}

fn valid(yaml: &str) -> ProjectFile {
    match parse("project.yaml", yaml.as_bytes()) {
        Ok(file) => file,
        Err(problems) => panic!("expected a valid file, got:\n{problems}"),
    }
}

const FULL: &str = r#"# one project
name: checkout-api
owner: team-payments
description: Takes payments at checkout
lifecycle: production        # experimental | production | deprecated
tags: [payments, grpc]
links:
  - title: Runbook
    url: https://runbooks.example.com/checkout
labels:
  tier: "1"
  cluster: eu-west-1
depends_on: [payments-db, fraud-api]
system: shop
"#;

#[test]
fn parse_should_read_every_field_of_the_one_project_shape() {
    let file = valid(FULL);
    let expected = Project {
        name: ProjectName::parse("checkout-api").unwrap(),
        fields: Fields {
            owner: "team-payments".into(),
            description: Some("Takes payments at checkout".into()),
            lifecycle: Some("production".into()),
            tags: vec!["payments".into(), "grpc".into()],
            links: vec![Link {
                title: "Runbook".into(),
                url: "https://runbooks.example.com/checkout".into(),
            }],
            labels: BTreeMap::from([
                ("cluster".to_string(), "eu-west-1".to_string()),
                ("tier".to_string(), "1".to_string()),
            ]),
            depends_on: vec!["payments-db".into(), "fraud-api".into()],
            system: Some("shop".into()),
        },
    };
    assert_eq!(
        file,
        ProjectFile {
            projects: vec![expected]
        }
    );
}

#[test]
fn a_full_project_should_round_trip_through_the_api_json() {
    let project = valid(FULL).projects.remove(0);
    let json = serde_json::to_value(&project).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "name": "checkout-api",
            "owner": "team-payments",
            "description": "Takes payments at checkout",
            "lifecycle": "production",
            "tags": ["payments", "grpc"],
            "links": [{"title": "Runbook", "url": "https://runbooks.example.com/checkout"}],
            "labels": {"cluster": "eu-west-1", "tier": "1"},
            "depends_on": ["payments-db", "fraud-api"],
            "system": "shop"
        })
    );
    let back: Project = serde_json::from_value(json).unwrap();
    assert_eq!(back, project);
}

#[test]
fn parse_should_read_the_projects_shape() {
    let file = valid(
        "# several projects from one repository (a monorepo)\n\
         projects:\n  - name: checkout-api\n    owner: team-payments\n  - name: checkout-worker\n    owner: team-payments\n",
    );
    let names: Vec<&str> = file.projects.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["checkout-api", "checkout-worker"]);
    assert_eq!(file.projects[1].fields.owner, "team-payments");
    assert_eq!(file.projects[1].fields.description, None);
    assert!(file.projects[1].fields.tags.is_empty());
}

#[test]
fn parse_should_leave_optional_fields_absent_when_they_are_empty() {
    let file =
        valid("name: a\nowner: b\ndescription:\nlifecycle: ~\ntags:\nlinks: []\nlabels: {}\n");
    let project = &file.projects[0];
    assert_eq!(project.fields.description, None);
    assert_eq!(project.fields.lifecycle, None);
    assert!(
        project.fields.tags.is_empty()
            && project.fields.links.is_empty()
            && project.fields.labels.is_empty()
    );
}

#[test]
fn parse_should_take_plain_scalars_as_their_text() {
    let file =
        valid("name: \"2024\"\nowner: 42\nlabels:\n  tier: 1\n  ratio: 1.10\n  enabled: true\n");
    let project = &file.projects[0];
    assert_eq!(project.name.as_str(), "2024");
    assert_eq!(project.fields.owner, "42");
    assert_eq!(project.fields.labels["tier"], "1");
    assert_eq!(project.fields.labels["ratio"], "1.10");
    assert_eq!(project.fields.labels["enabled"], "true");
}

#[test]
fn parse_should_follow_aliases_that_stay_small() {
    let file = valid(
        "projects:\n  - name: a\n    owner: &team team-payments\n  - name: b\n    owner: *team\n",
    );
    assert_eq!(file.projects[1].fields.owner, "team-payments");
}

#[test]
fn parse_should_accept_a_byte_order_mark() {
    let file = valid("\u{feff}name: a\nowner: b\n");
    assert_eq!(file.projects[0].name.as_str(), "a");
}

// name

#[test]
fn name_should_be_required() {
    assert_eq!(
        problems("owner: team-payments\n"),
        ["project.yaml:1:1: name: missing required field"]
    );
}

#[test]
fn name_should_not_be_empty() {
    assert_eq!(
        problems("name: \"\"\nowner: x\n"),
        ["project.yaml:1:7: name: must not be empty"]
    );
    // An empty value is placed at its colon.
    assert_eq!(
        problems("name:\nowner: x\n"),
        ["project.yaml:1:5: name: must not be empty"]
    );
}

#[test]
fn name_should_have_at_most_63_characters() {
    let yaml = format!("name: {}\nowner: x\n", "a".repeat(64));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:1:7: name: must be at most 63 characters, found 64"]
    );
}

#[test]
fn name_should_hold_only_lowercase_letters_digits_and_dashes() {
    assert_eq!(
        problems("name: Checkout_API\nowner: x\n"),
        ["project.yaml:1:7: name: must contain only lowercase letters, digits and '-', found \"Checkout_API\""]
    );
}

#[test]
fn name_should_start_and_end_with_a_letter_or_digit() {
    assert_eq!(
        problems("name: checkout-\nowner: x\n"),
        ["project.yaml:1:7: name: must start and end with a lowercase letter or digit, found \"checkout-\""]
    );
    assert_eq!(
        problems("name: \"-checkout\"\nowner: x\n"),
        ["project.yaml:1:7: name: must start and end with a lowercase letter or digit, found \"-checkout\""]
    );
}

#[test]
fn name_should_be_a_string() {
    assert_eq!(
        problems("name: [a]\nowner: x\n"),
        ["project.yaml:1:7: name: must be a string, found a list"]
    );
}

#[test]
fn name_should_be_unique_within_the_file() {
    let yaml = "projects:\n  - name: a\n    owner: x\n  - name: b\n    owner: x\n  - name: a\n    owner: y\n";
    assert_eq!(
        problems(yaml),
        ["project.yaml:6:11: projects[2].name: duplicate name \"a\" (already declared by projects[0].name at line 2)"]
    );
}

// owner

#[test]
fn owner_should_be_required() {
    assert_eq!(
        problems("name: checkout-api\n"),
        ["project.yaml:1:1: owner: missing required field"]
    );
}

#[test]
fn owner_should_not_be_empty() {
    // The example of docs/contract.md#the-project-file.
    assert_eq!(
        problems("# a comment\nname: checkout-api\ndescription: x\nowner: \"\"\n"),
        ["project.yaml:4:8: owner: must not be empty"]
    );
    assert_eq!(
        problems("name: a\nowner: \"   \"\n"),
        ["project.yaml:2:8: owner: must not be empty"]
    );
}

#[test]
fn owner_should_have_at_most_100_characters() {
    let yaml = format!("name: a\nowner: {}\n", "o".repeat(101));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:2:8: owner: must be at most 100 characters, found 101"]
    );
    valid(&format!("name: a\nowner: {}\n", "o".repeat(100)));
}

// description and lifecycle

#[test]
fn description_should_have_at_most_1000_characters() {
    let yaml = format!("name: a\nowner: b\ndescription: {}\n", "é".repeat(1001));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:3:14: description: must be at most 1000 characters, found 1001"]
    );
    valid(&format!(
        "name: a\nowner: b\ndescription: {}\n",
        "é".repeat(1000)
    ));
}

#[test]
fn lifecycle_should_be_one_of_the_three_values() {
    assert_eq!(
        problems("name: a\nowner: b\nlifecycle: prod\n"),
        ["project.yaml:3:12: lifecycle: must be one of experimental, production, deprecated, found \"prod\""]
    );
    for value in ["experimental", "production", "deprecated"] {
        let file = valid(&format!("name: a\nowner: b\nlifecycle: {value}\n"));
        assert_eq!(file.projects[0].fields.lifecycle.as_deref(), Some(value));
    }
}

// tags

#[test]
fn tags_should_be_at_most_20() {
    let tags: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
    let yaml = format!("name: a\nowner: b\ntags: [{}]\n", tags.join(", "));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:3:7: tags: at most 20 tags are allowed, found 21"]
    );
}

#[test]
fn tags_should_each_be_like_a_name() {
    assert_eq!(
        problems("name: a\nowner: b\ntags:\n  - payments\n  - gRPC\n  - \"\"\n"),
        [
            "project.yaml:5:5: tags[1]: must contain only lowercase letters, digits and '-', found \"gRPC\"",
            "project.yaml:6:5: tags[2]: must not be empty",
        ]
    );
}

#[test]
fn tags_should_be_a_list() {
    assert_eq!(
        problems("name: a\nowner: b\ntags: payments\n"),
        ["project.yaml:3:7: tags: must be a list, found a string"]
    );
}

// labels

#[test]
fn labels_should_be_at_most_50() {
    let labels: Vec<String> = (0..51).map(|i| format!("k{i}: v")).collect();
    let yaml = format!("name: a\nowner: b\nlabels: {{{}}}\n", labels.join(", "));
    assert_eq!(
        problems(&yaml),
        ["project.yaml:3:9: labels: at most 50 labels are allowed, found 51"]
    );
}

#[test]
fn labels_should_map_strings_to_strings() {
    assert_eq!(
        problems("name: a\nowner: b\nlabels:\n  tier: [1]\n  zone:\n  ? [x]\n  : y\n"),
        [
            "project.yaml:4:9: labels.tier: must be a string, found a list",
            "project.yaml:5:7: labels.zone: must be a string, found nothing (write \"\" for an empty value)",
            "project.yaml:6:5: labels: keys must be strings",
        ]
    );
    assert_eq!(
        problems("name: a\nowner: b\nlabels: [tier]\n"),
        ["project.yaml:3:9: labels: must be a mapping of strings to strings, found a list"]
    );
}

// links

#[test]
fn links_should_be_at_most_20() {
    let link = "{title: t, url: \"https://example.com\"}";
    let yaml = format!(
        "name: a\nowner: b\nlinks: [{}]\n",
        vec![link; 21].join(", ")
    );
    assert_eq!(
        problems(&yaml),
        ["project.yaml:3:8: links: at most 20 links are allowed, found 21"]
    );
}

#[test]
fn links_should_have_a_title_and_an_http_url() {
    let yaml = "name: a\nowner: b\nlinks:\n  - title: Runbook\n    url: ftp://files.example.com/x\n  - url: https://example.com\n  - title: \"\"\n    url: not a url\n  - title: Docs\n    url: \"\"\n";
    assert_eq!(
        problems(yaml),
        [
            "project.yaml:5:10: links[0].url: must be an http or https URL, found \"ftp://files.example.com/x\"",
            "project.yaml:6:5: links[1].title: missing required field",
            "project.yaml:7:12: links[2].title: must not be empty",
            "project.yaml:8:10: links[2].url: must be an http or https URL, found \"not a url\" (relative URL without a base)",
            "project.yaml:10:10: links[3].url: must not be empty",
        ]
    );
}

#[test]
fn links_should_refuse_unknown_fields_and_non_mappings() {
    assert_eq!(
        problems("name: a\nowner: b\nlinks:\n  - titel: Runbook\n    url: https://example.com\n  - https://example.com\n"),
        [
            "project.yaml:4:5: links[0].titel: unknown field, did you mean `title`? (expected one of title, url)",
            "project.yaml:4:5: links[0].title: missing required field",
            "project.yaml:6:5: links[1]: must be a mapping with title and url, found a string",
        ]
    );
}

// unknown keys and duplicates

#[test]
fn unknown_keys_should_be_named() {
    assert_eq!(
        problems("name: a\nowner: b\ncolour: red\n"),
        known(&["project.yaml:3:1: colour: unknown field {KNOWN}"])
    );
}

#[test]
fn keys_should_not_be_empty() {
    assert_eq!(
        problems("name: a\nowner: b\n: x\n"),
        ["project.yaml:3:1: file: keys must not be empty"]
    );
}

#[test]
fn a_key_given_twice_should_be_reported_at_the_second() {
    assert_eq!(
        problems("name: a\nowner: b\nname: c\n"),
        ["project.yaml:3:1: name: duplicate key (first given at line 1)"]
    );
}

// the projects shape

#[test]
fn the_projects_shape_should_name_fields_by_their_path() {
    let yaml = "projects:\n  - name: a\n    owner: x\n  - name: b\n    owner: \"\"\n    links:\n      - title: t\n        url: mailto:x@example.com\n";
    assert_eq!(
        problems(yaml),
        [
            "project.yaml:5:12: projects[1].owner: must not be empty",
            "project.yaml:8:14: projects[1].links[0].url: must be an http or https URL, found \"mailto:x@example.com\"",
        ]
    );
}

#[test]
fn the_projects_shape_should_hold_only_the_projects_key() {
    assert_eq!(
        problems("owner: x\nprojects:\n  - name: a\n    owner: x\n"),
        ["project.yaml:1:1: owner: unknown field next to projects (a project's fields go inside its item of the list)"]
    );
}

#[test]
fn the_projects_shape_should_list_at_least_one_project() {
    assert_eq!(
        problems("projects: []\n"),
        ["project.yaml:1:11: projects: must list at least one project"]
    );
    assert_eq!(
        problems("projects:\n"),
        ["project.yaml:1:9: projects: must list at least one project"]
    );
    assert_eq!(
        problems("projects:\n  name: a\n"),
        ["project.yaml:2:3: projects: must be a list of projects, found a mapping"]
    );
    assert_eq!(
        problems("projects:\n  - checkout-api\n"),
        ["project.yaml:2:5: projects[0]: must be a mapping with name and owner, found a string"]
    );
}

#[test]
fn every_problem_should_be_reported_in_document_order() {
    let yaml = "projects:\n  - name: Checkout\n    colour: red\n  - owner: x\n    lifecycle: old\n    tags: [ok, No]\n";
    assert_eq!(
        problems(yaml),
        known(&[
            "project.yaml:2:5: projects[0].owner: missing required field",
            "project.yaml:2:11: projects[0].name: must contain only lowercase letters, digits and '-', found \"Checkout\"",
            "project.yaml:3:5: projects[0].colour: unknown field {KNOWN}",
            "project.yaml:4:5: projects[1].name: missing required field",
            "project.yaml:5:16: projects[1].lifecycle: must be one of experimental, production, deprecated, found \"old\"",
            "project.yaml:6:16: projects[1].tags[1]: must contain only lowercase letters, digits and '-', found \"No\"",
        ])
    );
}

// the file as a whole

#[test]
fn a_yaml_syntax_error_should_carry_the_parser_position() {
    assert_eq!(
        problems("name: a\nowner: b: c\n"),
        ["project.yaml:2:9: yaml: mapping values are not allowed in this context"]
    );
}

#[test]
fn a_bracket_never_closed_should_be_reported_where_it_opens() {
    let expected =
        ["project.yaml:3:7: yaml: this `[` is never closed: a list in brackets ends with `]`"];
    assert_eq!(
        problems("name: a\nowner: b\ntags: [x, y\ndescription: hi\n"),
        expected
    );
    assert_eq!(problems("name: a\nowner: b\ntags: [x, y\n"), expected);
    assert_eq!(
        problems("name: a\nowner: b\nlabels: {team: x,\n\ndescription: hi\n"),
        ["project.yaml:3:9: yaml: this `{` is never closed: a mapping in braces ends with `}`"]
    );
}

#[test]
fn a_misspelt_field_should_be_answered_with_did_you_mean() {
    assert_eq!(
        problems("name: a\nowner: b\ndescripton: hi\n"),
        known(&[
            "project.yaml:3:1: descripton: unknown field, did you mean `description`? {KNOWN}"
        ])
    );
}

#[test]
fn an_empty_file_should_be_invalid() {
    for yaml in ["", "\n", "# nothing yet\n", "~\n", "---\n"] {
        assert_eq!(
            problems(yaml),
            ["project.yaml: file: is empty (a project file needs at least name and owner)"],
            "for {yaml:?}"
        );
    }
}

#[test]
fn a_top_level_that_is_not_a_mapping_should_be_refused() {
    assert_eq!(
        problems("- name: a\n  owner: b\n"),
        ["project.yaml:1:1: file: must be a mapping with the fields of a project or with projects, found a list"]
    );
}

#[test]
fn a_second_document_should_be_refused() {
    assert_eq!(
        problems("name: a\nowner: b\n---\nname: c\nowner: d\n"),
        ["project.yaml:3:1: yaml: more than one YAML document (a project file holds one)"]
    );
}

#[test]
fn a_file_that_is_not_utf8_should_be_refused_at_the_first_bad_byte() {
    assert_eq!(
        problems_of(b"name: a\nowner: caf\xe9\n"),
        ["project.yaml:2:11: file: is not valid UTF-8 (byte 0xe9 at offset 18)"]
    );
    // UTF-16 with its byte order mark.
    assert_eq!(
        problems_of(b"\xff\xfen\x00a\x00"),
        ["project.yaml:1:1: file: is not valid UTF-8 (byte 0xff at offset 0)"]
    );
}

#[test]
fn a_file_over_256_kib_should_be_refused() {
    let mut yaml = b"name: a\nowner: b\n".to_vec();
    yaml.resize(MAX_FILE_BYTES + 1, b'#');
    assert_eq!(
        problems_of(&yaml),
        ["project.yaml: file: is 262145 bytes, more than the limit of 262144 bytes (256 KiB)"]
    );
    yaml.truncate(MAX_FILE_BYTES);
    valid(std::str::from_utf8(&yaml).unwrap());
}

/// Runs `f` and fails when it took more than a second: the limits must stop
/// hostile input early, not after the damage.
fn quickly<T>(f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let value = f();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "took {:?}",
        start.elapsed()
    );
    value
}

#[test]
fn a_billion_laughs_alias_bomb_should_be_refused_quickly() {
    let mut yaml = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let letters: Vec<char> = ('a'..='i').collect();
    for pair in letters.windows(2) {
        let (previous, next) = (pair[0], pair[1]);
        let refs = vec![format!("*{previous}"); 9].join(",");
        yaml.push_str(&format!("{next}: &{next} [{refs}]\n"));
    }
    let found = quickly(|| problems(&yaml));
    assert_eq!(
        found,
        ["project.yaml:5:32: yaml: this alias expands the document past the limit of 262144 bytes (256 KiB)"]
    );
}

#[test]
fn deep_flow_nesting_should_be_refused_quickly() {
    let yaml = "[".repeat(10_000);
    assert_eq!(
        quickly(|| problems(&yaml)),
        ["project.yaml:1:256: yaml: nesting is too deep (recursion limit exceeded)"]
    );
}

#[test]
fn deep_block_nesting_should_be_refused_quickly() {
    let yaml = format!("{}x\n", "- ".repeat(10_000));
    assert_eq!(
        quickly(|| problems(&yaml)),
        ["project.yaml:1:129: yaml: nesting is too deep (more than 64 levels)"]
    );
}
