//! Feeds arbitrary bytes to the project-file parser and validator.
//!
//! Beyond "does not panic", it checks what docs/contract.md (the project file,
//! bounds) promises of the answer: a valid file obeys every limit (at most 100 projects among
//! them), and an invalid one yields at least one problem, each printable as
//! one `FILE:LINE:COLUMN: FIELD: message` line with 1-based positions; at
//! most 100 problems, then, only when there were more, one line
//! `project.yaml: file: … and N more problems`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use roster::project::{parse, MAX_NAME_CHARS, MAX_PROBLEMS, MAX_PROJECTS, MORE_PREFIX};

fuzz_target!(|data: &[u8]| {
    match parse("project.yaml", data) {
        Ok(file) => {
            assert!(!file.projects.is_empty(), "a valid file declares a project");
            assert!(file.projects.len() <= MAX_PROJECTS, "at most 100 projects");
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
            assert!(
                problems.0.len() <= MAX_PROBLEMS + 1,
                "at most 100 problems and the line counting the rest"
            );
            let is_more = |problem: &roster::project::Problem| {
                problem.field == "file" && problem.message.starts_with(MORE_PREFIX)
            };
            for (index, problem) in problems.0.iter().enumerate() {
                // The "and N more" line comes last, only after 100 others,
                // and counts at least one.
                let last = index + 1 == problems.0.len();
                if is_more(problem) {
                    assert!(last && index == MAX_PROBLEMS, "{problems:?}");
                    assert!(problem.line.is_none(), "{problem:?}");
                    let count = problem
                        .message
                        .strip_prefix(MORE_PREFIX)
                        .and_then(|rest| rest.split_once(" more problem"))
                        .and_then(|(count, _)| count.parse::<usize>().ok());
                    assert!(count.is_some_and(|count| count >= 1), "{problem:?}");
                } else {
                    assert!(index < MAX_PROBLEMS, "{problems:?}");
                }
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
                // Quoted text is cut: no line grows with the file.
                assert!(problem.field.chars().count() <= 200, "{problem:?}");
                assert!(problem.message.chars().count() <= 500, "{problem:?}");
                let line = problem.to_string();
                assert!(
                    !line.contains(['\n', '\r']),
                    "one line per problem: {line:?}"
                );
            }
        }
    }
});
