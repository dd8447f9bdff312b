//! Feeds arbitrary bytes to the project-file parser and validator.
//!
//! Beyond "does not panic", it checks what SPEC §2 promises of the answer:
//! a valid file obeys every limit, and an invalid one yields at least one
//! problem, each printable as one `FILE:LINE:COLUMN: FIELD: message` line
//! with 1-based positions.

#![no_main]

use libfuzzer_sys::fuzz_target;
use roster::project::{parse, MAX_NAME_CHARS};

fuzz_target!(|data: &[u8]| {
    match parse("project.yaml", data) {
        Ok(file) => {
            assert!(!file.projects.is_empty(), "a valid file declares a project");
            for project in &file.projects {
                let name = project.name.as_str();
                assert!(!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS);
                assert!(!project.owner.trim().is_empty());
                assert!(project.owner.chars().count() <= 100);
                if let Some(description) = &project.description {
                    assert!(description.chars().count() <= 1000);
                }
                assert!(project.tags.len() <= 20);
                assert!(project.links.len() <= 20);
                assert!(project.labels.len() <= 50);
            }
        }
        Err(problems) => {
            assert!(
                !problems.0.is_empty(),
                "an error names at least one problem"
            );
            for problem in &problems.0 {
                assert!(problem.line.is_none_or(|line| line >= 1), "{problem:?}");
                assert!(
                    problem.column.is_none_or(|column| column >= 1),
                    "{problem:?}"
                );
                assert!(
                    problem.column.is_none() || problem.line.is_some(),
                    "{problem:?}"
                );
                assert!(!problem.field.is_empty(), "{problem:?}");
                let line = problem.to_string();
                assert!(
                    !line.contains(['\n', '\r']),
                    "one line per problem: {line:?}"
                );
            }
        }
    }
});
