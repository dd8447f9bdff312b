//! The problems a walk of a file finds, kept to the first
//! [`MAX_PROBLEMS`] in document order (docs/contract.md#bounds).
//!
//! A hostile file can break a rule on every line; holding all of them would
//! cost memory in proportion to the file and, once printed, megabytes of
//! error text. The walk still counts every problem (so the last line can say
//! how many more there were), but this list never holds more than twice the
//! bound: past that it is sorted and cut back to the bound.

use super::tree::Pos;
use super::MAX_PROBLEMS;

/// A problem before it is given a file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub pos: Option<Pos>,
    pub field: String,
    pub message: String,
}

/// The first problems by position (ties in the order they were found), and
/// how many were found in all.
#[derive(Debug, Default)]
pub(crate) struct Issues {
    kept: Vec<Issue>,
    found: usize,
}

impl Issues {
    pub fn push(&mut self, issue: Issue) {
        self.found += 1;
        self.kept.push(issue);
        if self.kept.len() >= 2 * MAX_PROBLEMS {
            self.cut();
        }
    }

    /// Every problem found so far, also those no longer kept: a part of the
    /// file is valid when this did not move while it was read.
    pub fn found(&self) -> usize {
        self.found
    }

    /// The first [`MAX_PROBLEMS`] problems in document order, and how many
    /// more were found.
    pub fn finish(mut self) -> (Vec<Issue>, usize) {
        self.cut();
        let more = self.found - self.kept.len();
        (self.kept, more)
    }

    /// A stable sort keeps problems at one position in the order found, and
    /// the problems cut are all later than those kept, so cutting as it goes
    /// keeps exactly what sorting everything at the end would keep.
    fn cut(&mut self) {
        self.kept.sort_by_key(|issue| issue.pos);
        self.kept.truncate(MAX_PROBLEMS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize, message: &str) -> Issue {
        Issue {
            pos: Some(Pos { line, column: 1 }),
            field: "name".into(),
            message: message.into(),
        }
    }

    #[test]
    fn issues_should_keep_the_first_hundred_by_position_and_count_the_rest() {
        let mut issues = Issues::default();
        // Found from the end of the file back, as a late check may find them.
        for line in (1..=1000).rev() {
            issues.push(at(line, "late"));
        }
        assert_eq!(issues.found(), 1000);
        let (kept, more) = issues.finish();
        assert_eq!(more, 900);
        let lines: Vec<usize> = kept.iter().filter_map(|i| i.pos).map(|p| p.line).collect();
        assert_eq!(lines, (1..=100).collect::<Vec<_>>());
    }

    #[test]
    fn issues_at_one_position_should_stay_in_the_order_found() {
        let mut issues = Issues::default();
        for n in 0..250 {
            issues.push(at(7, &n.to_string()));
        }
        let (kept, more) = issues.finish();
        assert_eq!(more, 150);
        let order: Vec<String> = kept.into_iter().map(|i| i.message).collect();
        let expected: Vec<String> = (0..100).map(|n| n.to_string()).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn issues_under_the_bound_should_all_be_kept_sorted() {
        let mut issues = Issues::default();
        issues.push(at(3, "c"));
        issues.push(Issue {
            pos: None,
            field: "file".into(),
            message: "whole file".into(),
        });
        issues.push(at(1, "a"));
        let (kept, more) = issues.finish();
        assert_eq!(more, 0);
        let messages: Vec<&str> = kept.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(messages, ["whole file", "a", "c"]);
    }
}
