//! The project file (`project.yaml`) and its rules (docs/contract.md#the-project-file).
//!
//! [`parse`] turns the bytes of a file into a [`ProjectFile`], or into every
//! [`Problem`] found, each with the line and column of the offending YAML
//! node, like a compiler. Positions come from `saphyr-parser`, a streaming
//! YAML parser that gives a span for every event; `serde_yaml` has none.
//!
//! Choices the rules leave open (docs/contract.md#the-project-file):
//! - plain scalars are taken as their text, so `tier: 1` is the label `"1"`
//!   (the source text is kept, never a re-printed number);
//! - an empty field (`description:`) counts as absent for optional fields and
//!   as empty for required ones; an empty file is invalid;
//! - YAML tags (`!!str`) are ignored, merge keys (`<<`) are unknown fields;
//! - nesting deeper than 64 levels is refused, as are aliases that would
//!   expand the document past [`MAX_FILE_BYTES`].
//!
//! Bounds (docs/contract.md#bounds): a file declares at most [`MAX_PROJECTS`] projects, and
//! reports at most [`MAX_PROBLEMS`] problems, then one line saying how many
//! more there were; a field or message quoting a long text from the file is
//! cut (`…`), so that no problem line is longer than about 700 characters.

pub mod fields;
pub mod files_verdict;
pub mod invisible;
mod issues;
mod model;
mod name;
pub mod owners;
pub mod patterns;
mod positions;
pub mod preview;
mod problem;
pub mod relations;
mod rules;
mod suggest;
pub(crate) mod tree;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use fields::{Fields, Link, OwnerStatus, ResolvedOwner};
pub use model::{Project, ProjectFile};
pub use name::{NameError, ProjectName, MAX_NAME_CHARS};
pub use patterns::ProjectFiles;
pub use positions::{dependency_positions, name_positions, owner_positions, NamePosition};
pub use problem::{Problem, Problems};

/// The project file's JSON Schema (draft 2020-12), for editors: served at
/// `GET /schema/project.json` and printed by `roster schema`. It says the
/// rules a schema can say; a file it rejects is one `roster check` rejects
/// too (`tests/project_schema.rs` keeps the two in step).
pub const PROJECT_SCHEMA: &str = include_str!("schema.json");

use std::panic::{catch_unwind, AssertUnwindSafe};

use issues::Issue;
use tree::Pos;

/// Largest project file accepted, before and after alias expansion: far more
/// than any real file needs, small enough that a hostile one costs nothing.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// The version of the rules a file is checked against: raised whenever a
/// rule changes what a file decides, so that a state recorded under older
/// rules is read again instead of being carried forward by a push.
pub const RULES_VERSION: u32 = 1;

/// Problems reported for one file; the rest are counted on one more line
/// (`FILE: file: … and N more problems`). A hundred is more than anyone
/// fixes in one go, and keeps the stored error and the API answers small.
pub const MAX_PROBLEMS: usize = 100;

/// How the message of the "and N more problems" line starts.
pub const MORE_PREFIX: &str = "… and ";

/// Projects one file (one repository) may declare: a monorepo needs a few
/// dozen at most; a hostile file cannot make one reconcile write thousands.
pub const MAX_PROJECTS: usize = 100;

/// Longest field path and message of a problem, in characters: both may
/// quote text from the file (a key, a value), which is cut past these.
const MAX_FIELD_CHARS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 500;

/// Reads a project file. `file` is the label used in messages (the path
/// inside the repository, e.g. `project.yaml`). Returns the problems, in
/// document order, when the file breaks any rule: the first
/// [`MAX_PROBLEMS`], then a line saying how many more there were.
pub fn parse(file: &str, bytes: &[u8]) -> Result<ProjectFile, Problems> {
    check_size(file, bytes.len() as u64)?;
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => return Err(not_utf8(file, bytes, error.valid_up_to())),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(at) = text.find('\0') {
        return Err(one(nul_problem(file, text_pos(&text[..at]))));
    }
    // The parser is not ours: a panic on strange input must not take the
    // caller down with it.
    let loaded = catch_unwind(AssertUnwindSafe(|| tree::load(text))).unwrap_or_else(|_| {
        Err(tree::LoadError {
            pos: Pos { line: 1, column: 1 },
            message: "the YAML parser failed on this file".into(),
        })
    });
    let tree = loaded.map_err(|error| {
        one(Problem {
            file: file.to_owned(),
            line: Some(error.pos.line),
            column: Some(error.pos.column),
            field: "yaml".into(),
            message: clip(one_line(error.message), MAX_MESSAGE_CHARS),
        })
    })?;
    if let Some(problems) = nul_scalars(file, &tree) {
        return Err(problems);
    }
    let root = match tree.root {
        Some(root) if !is_empty(&tree, root) => root,
        _ => {
            return Err(one(Problem {
                file: file.to_owned(),
                line: None,
                column: None,
                field: "file".into(),
                message: "is empty (a project file needs at least name and owner)".into(),
            }))
        }
    };
    let (projects, issues, more) = rules::read(&tree, root);
    if issues.is_empty() {
        return Ok(ProjectFile { projects });
    }
    let mut problems: Vec<Problem> = issues
        .into_iter()
        .map(|issue| with_file(file, issue))
        .collect();
    if more > 0 {
        problems.push(more_problems(file, more));
    }
    Err(Problems(problems))
}

/// The line that stands for the problems past [`MAX_PROBLEMS`].
/// Worded as docs/contract.md#bounds gives it, "problems" even for one, so that scripts can
/// match the line.
fn more_problems(file: &str, more: usize) -> Problem {
    Problem {
        file: file.to_owned(),
        line: None,
        column: None,
        field: "file".into(),
        message: format!("{MORE_PREFIX}{more} more problems"),
    }
}

/// Refuses a file of `size` bytes over [`MAX_FILE_BYTES`]; lets callers that
/// know the size first (file metadata, GitHub's answer) skip reading it.
pub fn check_size(file: &str, size: u64) -> Result<(), Problems> {
    if size <= MAX_FILE_BYTES as u64 {
        return Ok(());
    }
    Err(one(Problem {
        file: file.to_owned(),
        line: None,
        column: None,
        field: "file".into(),
        message: format!(
            "is {size} bytes, more than the limit of {MAX_FILE_BYTES} bytes (256 KiB)"
        ),
    }))
}

fn one(problem: Problem) -> Problems {
    Problems(vec![problem])
}

fn with_file(file: &str, issue: Issue) -> Problem {
    Problem {
        file: file.to_owned(),
        line: issue.pos.map(|pos| pos.line),
        column: issue.pos.map(|pos| pos.column),
        field: clip(one_line(issue.field), MAX_FIELD_CHARS),
        message: clip(one_line(issue.message), MAX_MESSAGE_CHARS),
    }
}

/// Cuts `text` to `max` characters, the last being `…`.
fn clip(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some(_) => {
            let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
            cut.push('…');
            cut
        }
    }
}

/// Each problem prints on one line (docs/contract.md#the-project-file), but fields and messages quote
/// text from the file, which may hold line breaks: those are escaped (`\n`).
fn one_line(text: String) -> String {
    let breaks = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !text.contains(breaks) {
        return text;
    }
    text.chars()
        .map(|c| {
            if breaks(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A document that is only `~`, `null` or nothing at all.
fn is_empty(tree: &tree::Tree, root: tree::NodeId) -> bool {
    matches!(&tree.get(root).kind, tree::Kind::Scalar { text, plain } if rules::is_null(text, *plain))
}

/// The line and column just after `before`, the text that precedes a spot.
fn text_pos(before: &str) -> Pos {
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |tail| tail.chars().count())
        + 1;
    Pos { line, column }
}

/// A NUL (U+0000), written as is or as the escape `"\0"`: PostgreSQL cannot
/// store it in text, so it makes the file invalid, at its spot, instead of
/// making every write of the entry fail.
fn nul_problem(file: &str, pos: Pos) -> Problem {
    Problem {
        file: file.to_owned(),
        line: Some(pos.line),
        column: Some(pos.column),
        field: "file".into(),
        message: "contains a NUL character (U+0000), which a project file may not hold".into(),
    }
}

/// Every key or value holding a NUL (from an escape such as `"a\0b"`),
/// the first [`MAX_PROBLEMS`] of them; `None` when there is none.
fn nul_scalars(file: &str, tree: &tree::Tree) -> Option<Problems> {
    let mut found = tree.nodes.iter().filter_map(|node| match &node.kind {
        tree::Kind::Scalar { text, .. } if text.contains('\0') => Some(node.pos),
        _ => None,
    });
    let first = found.next()?;
    let mut problems: Vec<Problem> = std::iter::once(first)
        .chain(found.by_ref().take(MAX_PROBLEMS - 1))
        .map(|pos| nul_problem(file, pos))
        .collect();
    let more = found.count();
    if more > 0 {
        problems.push(more_problems(file, more));
    }
    Some(Problems(problems))
}

/// Points at the first byte that is not UTF-8.
fn not_utf8(file: &str, bytes: &[u8], valid_up_to: usize) -> Problems {
    let valid = String::from_utf8_lossy(&bytes[..valid_up_to]);
    let Pos { line, column } = text_pos(&valid);
    one(Problem {
        file: file.to_owned(),
        line: Some(line),
        column: Some(column),
        field: "file".into(),
        message: format!(
            "is not valid UTF-8 (byte 0x{:02x} at offset {valid_up_to})",
            bytes.get(valid_up_to).copied().unwrap_or(0)
        ),
    })
}
