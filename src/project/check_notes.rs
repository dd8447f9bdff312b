//! What the owners and the relations add to a check run, said one way: a
//! note per problem (an annotation on its line), a section of the summary
//! under its heading, and the conclusion `failure` when a note breaks the
//! file, else the title counting what to look at.

use serde_json::{json, Value};

use super::invisible::escape_invisible;
use super::preview::plural;
use super::verdict::{clip_summary, Verdict};
use super::Problem;

/// One problem a check reports beside the file's own rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckNote<'a> {
    pub problem: &'a Problem,
    /// It breaks the file; a warning otherwise.
    pub failure: bool,
}

impl<'a> CheckNote<'a> {
    /// A note of any kind as the summary and annotations show it.
    pub fn new(problem: &'a Problem, failure: bool) -> Self {
        CheckNote { problem, failure }
    }
}

/// How a kind of note is introduced in the summary and counted in the title.
#[derive(Debug, Clone, Copy)]
pub struct NoteSection<'a> {
    /// `**Owners** (checked against …)`.
    pub heading: &'a str,
    /// The sentence after it when a note breaks the file.
    pub when_broken: &'a str,
    /// The sentence after it otherwise.
    pub when_applied: &'a str,
    /// What the title counts: one, several.
    pub counted: (&'static str, &'static str),
    /// The line of a note that has none (`None`: it gets no annotation).
    pub default_line: Option<usize>,
}

/// Adds `notes` to `verdict` as `section` says.
pub fn add_notes<'a>(
    verdict: &mut Verdict,
    notes: impl IntoIterator<Item = CheckNote<'a>>,
    section: &NoteSection<'_>,
) {
    let notes: Vec<_> = notes.into_iter().collect();
    if notes.is_empty() {
        return;
    }
    let failures = notes.iter().filter(|n| n.failure).count();
    if failures > 0 {
        let before = match verdict.conclusion {
            "failure" => verdict
                .annotations
                .iter()
                .filter(|a| a["annotation_level"] == "failure")
                .count(),
            _ => 0,
        };
        let count = before + failures;
        verdict.conclusion = "failure";
        verdict.title = format!("{count} {}", plural(count, "problem", "problems"));
    } else {
        let count = notes.len();
        let (one, many) = section.counted;
        verdict.title = format!("{} · {count} {}", verdict.title, plural(count, one, many));
    }
    let sentence = match failures {
        0 => section.when_applied,
        _ => section.when_broken,
    };
    let mut text = format!("\n{}: {sentence}\n\n```\n", section.heading);
    for note in &notes {
        text.push_str(&escape_invisible(&note.problem.to_string()));
        text.push('\n');
    }
    text.push_str("```\n");
    verdict.summary = clip_summary(format!("{}{text}", verdict.summary));
    verdict.annotations.extend(
        notes
            .iter()
            .filter_map(|note| annotation(note, section.default_line)),
    );
}

/// GitHub's annotation for one note, when it has a line.
fn annotation(note: &CheckNote<'_>, default_line: Option<usize>) -> Option<Value> {
    let problem = note.problem;
    let line = problem.line.or(default_line)?;
    let mut value = json!({
        "path": problem.file,
        "start_line": line,
        "end_line": line,
        "annotation_level": if note.failure { "failure" } else { "warning" },
        "message": escape_invisible(&format!("{}: {}", problem.field, problem.message)),
    });
    if let Some(column) = problem.column {
        value["start_column"] = json!(column);
        value["end_column"] = json!(column);
    }
    Some(value)
}
