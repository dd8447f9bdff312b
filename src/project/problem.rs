//! Rule violations, printed like compiler errors (docs/contract.md#the-project-file) so that editors
//! and CI logs can jump to them.

use std::fmt;

use serde::Serialize;

/// One broken rule: where (file, 1-based line and column when known), which
/// field (`name`, `projects[1].owner`, `yaml`, `file`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}: {}", self.field, self.message)
    }
}

/// The problems of a file, in document order; never empty when returned as
/// an error. At most [`super::MAX_PROBLEMS`], then one more line,
/// `FILE: file: … and N more problems`, when the file had more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", lines(.0))]
pub struct Problems(pub Vec<Problem>);

fn lines(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(Problem::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(line: Option<usize>, column: Option<usize>) -> Problem {
        Problem {
            file: "project.yaml".into(),
            line,
            column,
            field: "owner".into(),
            message: "must not be empty".into(),
        }
    }

    #[test]
    fn display_should_read_like_a_compiler_error() {
        assert_eq!(
            problem(Some(4), Some(8)).to_string(),
            "project.yaml:4:8: owner: must not be empty"
        );
        assert_eq!(
            problem(None, None).to_string(),
            "project.yaml: owner: must not be empty"
        );
    }

    #[test]
    fn problems_should_show_one_problem_per_line() {
        let problems = Problems(vec![problem(Some(1), Some(1)), problem(None, None)]);
        assert_eq!(
            problems.to_string(),
            "project.yaml:1:1: owner: must not be empty\nproject.yaml: owner: must not be empty"
        );
    }
}
