//! Evaluates a project file at one commit against a snapshot of the
//! registry, with the reconcile's own rules (the file's rules, then name
//! ownership), into what the `Roster` check run says.

use serde_json::{json, Value};

use super::invisible::escape_invisible;
use super::preview::{plural, Preview, Snapshot};
use super::{name_positions, parse, Problem, ProjectFile, MORE_PREFIX};

/// GitHub's limit on a check run's `output.summary` and `output.text`, in
/// bytes (GitHub counts bytes: 65,535 characters of CJK text are refused).
pub const MAX_SUMMARY_BYTES: usize = 65_535;

/// The project file at the evaluated commit, as read from GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadFile {
    Absent,
    Found(Vec<u8>),
    /// There, but not usable as text (too large, binary, a link, a folder).
    Unreadable(String),
    /// The commit itself is gone (force-pushed away).
    CommitGone,
}

/// The file read by the rules, before the registry is asked.
#[derive(Debug, Clone)]
pub enum Parsed {
    Absent,
    CommitGone,
    Problems(Vec<Problem>),
    Valid { file: ProjectFile, text: String },
}

impl Parsed {
    /// Applies the rules of a project file to `head`.
    pub fn read(project_file: &str, head: HeadFile) -> Self {
        match head {
            HeadFile::Absent => Parsed::Absent,
            HeadFile::CommitGone => Parsed::CommitGone,
            HeadFile::Unreadable(message) => Parsed::Problems(vec![Problem {
                file: project_file.to_owned(),
                line: None,
                column: None,
                field: "file".into(),
                message,
            }]),
            HeadFile::Found(bytes) => match parse(project_file, &bytes) {
                Err(problems) => Parsed::Problems(problems.0),
                Ok(file) => Parsed::Valid {
                    file,
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                },
            },
        }
    }

    /// The names the file declares: the registry is asked who owns them.
    pub fn names(&self) -> Vec<String> {
        match self {
            Parsed::Valid { file, .. } => file
                .projects
                .iter()
                .map(|p| p.name.as_str().to_owned())
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// What the check run says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `success`, `failure` or `neutral`.
    pub conclusion: &'static str,
    pub title: String,
    pub summary: String,
    /// GitHub annotation objects on the project file.
    pub annotations: Vec<Value>,
}

/// Decides the check run for `parsed` at commit `sha` against `registry`,
/// with the file's invisible characters shown escaped
/// ([`escape_invisible`]) and the summary within GitHub's byte limit.
pub fn evaluate(project_file: &str, sha: &str, parsed: &Parsed, registry: &Snapshot) -> Verdict {
    shown(verdict_on_file(project_file, sha, parsed, registry))
}

/// `verdict` as GitHub gets it: invisible characters shown escaped in its
/// texts and annotations, the summary within GitHub's byte limit.
pub(super) fn shown(verdict: Verdict) -> Verdict {
    Verdict {
        conclusion: verdict.conclusion,
        title: escape_invisible(&verdict.title).into_owned(),
        summary: clip_summary(escape_invisible(&verdict.summary).into_owned()),
        annotations: verdict
            .annotations
            .into_iter()
            .map(escape_annotation)
            .collect(),
    }
}

/// An annotation's message with its invisible characters escaped.
pub fn escape_annotation(mut annotation: Value) -> Value {
    if let Some(message) = annotation.get("message").and_then(Value::as_str) {
        if let std::borrow::Cow::Owned(escaped) = escape_invisible(message) {
            annotation["message"] = Value::String(escaped);
        }
    }
    annotation
}

fn verdict_on_file(project_file: &str, sha: &str, parsed: &Parsed, registry: &Snapshot) -> Verdict {
    let short = sha.get(..7).unwrap_or(sha);
    match parsed {
        Parsed::CommitGone => Verdict {
            conclusion: "neutral",
            title: format!("commit {short} no longer exists"),
            summary: format!(
                "Commit `{short}` could not be read: it was probably force-pushed away. \
                 A newer commit of the pull request gets its own check.\n"
            ),
            annotations: Vec::new(),
        },
        Parsed::Absent if registry.entries.is_empty() => Verdict {
            conclusion: "neutral",
            title: format!("no {project_file}"),
            summary: format!(
                "Neither this commit nor the registry has a `{project_file}` for this \
                 repository: nothing to check.\n"
            ),
            annotations: Vec::new(),
        },
        Parsed::Absent => {
            let preview = Preview::all_removed(&registry.entries);
            Verdict {
                conclusion: "success",
                title: preview.counts(),
                summary: clip_summary(format!(
                    "This commit has no `{project_file}`.\n\n{}",
                    preview.markdown()
                )),
                annotations: Vec::new(),
            }
        }
        Parsed::Problems(problems) => {
            let count = problem_count(problems);
            let summary = format!(
                "`{project_file}` breaks {count} {} of the project file; the registry keeps \
                 its entries as they are until it is fixed.\n\n```\n",
                plural(count, "rule", "rules")
            );
            failing(summary, problems, count, "").clipped()
        }
        Parsed::Valid { file, text } => {
            let taken: Vec<&str> = registry.taken.iter().map(|t| t.name.as_str()).collect();
            let preview = Preview::compare(&file.projects, &registry.entries, &taken);
            if registry.taken.is_empty() {
                return Verdict {
                    conclusion: "success",
                    title: preview.counts(),
                    summary: clip_summary(preview.markdown()),
                    annotations: Vec::new(),
                };
            }
            let positions = name_positions(text);
            let problems: Vec<Problem> = registry
                .taken
                .iter()
                .map(|t| {
                    let at = positions.iter().find(|p| p.name == t.name);
                    Problem {
                        file: project_file.to_owned(),
                        line: at.map(|p| p.line),
                        column: at.map(|p| p.column),
                        field: at.map_or_else(|| "name".to_owned(), |p| p.field.clone()),
                        message: format!("\"{}\" is owned by {}", t.name, t.owner_repo),
                    }
                })
                .collect();
            let summary = String::from("Names another repository owns (a `conflict`):\n\n```\n");
            let after = format!(
                "\nThe rest of the file, once merged:\n\n{}",
                preview.markdown()
            );
            failing(summary, &problems, problems.len(), &after).clipped()
        }
    }
}

impl Verdict {
    /// The verdict with its summary within GitHub's byte limit.
    fn clipped(self) -> Self {
        Verdict {
            summary: clip_summary(self.summary),
            ..self
        }
    }
}

/// A `failure` of `count` problems: `summary`, which opens a code block,
/// then each problem on a line, the block closed, then `after`.
pub(crate) fn failing(
    mut summary: String,
    problems: &[Problem],
    count: usize,
    after: &str,
) -> Verdict {
    for problem in problems {
        summary.push_str(&problem.to_string());
        summary.push('\n');
    }
    summary.push_str("```\n");
    summary.push_str(after);
    Verdict {
        conclusion: "failure",
        title: format!("{count} {}", plural(count, "problem", "problems")),
        summary,
        annotations: problems.iter().map(annotation).collect(),
    }
}

/// How many problems the file has: the listed ones, and those the
/// "… and N more problems" line counts.
pub(crate) fn problem_count(problems: &[Problem]) -> usize {
    let more = problems.iter().find_map(|p| {
        p.message
            .strip_prefix(MORE_PREFIX)?
            .split(' ')
            .next()?
            .parse::<usize>()
            .ok()
    });
    match more {
        Some(more) => problems.len() - 1 + more,
        None => problems.len(),
    }
}

/// GitHub's annotation for one problem; a problem of the whole file sits
/// on its first line.
pub(crate) fn annotation(problem: &Problem) -> Value {
    let line = problem.line.unwrap_or(1);
    let mut value = json!({
        "path": problem.file,
        "start_line": line,
        "end_line": line,
        "annotation_level": "failure",
        "message": format!("{}: {}", problem.field, problem.message),
    });
    if let Some(column) = problem.column {
        value["start_column"] = json!(column);
        value["end_column"] = json!(column);
    }
    value
}

/// Cuts a summary to GitHub's limit in bytes at a line, saying that it was
/// cut.
pub fn clip_summary(summary: String) -> String {
    if summary.len() <= MAX_SUMMARY_BYTES {
        return summary;
    }
    const NOTE: &str = "\n… (cut: the full list is longer than GitHub shows)\n";
    let mut end = MAX_SUMMARY_BYTES - NOTE.len();
    while !summary.is_char_boundary(end) {
        end -= 1;
    }
    let head = &summary[..end];
    let cut = head.rfind('\n').unwrap_or(end);
    format!("{}{NOTE}", &summary[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::preview::OwnedElsewhere;

    fn run(text: &str, registry: &Snapshot) -> Verdict {
        let parsed = Parsed::read("project.yaml", HeadFile::Found(text.as_bytes().to_vec()));
        evaluate("project.yaml", "0123456789abcdef", &parsed, registry)
    }

    #[test]
    fn a_valid_file_should_succeed_with_the_counts_as_title() {
        let verdict = run("name: a\nowner: t\n", &Snapshot::default());
        assert_eq!(verdict.conclusion, "success");
        assert_eq!(verdict.title, "adds 1, changes 0, removes 0");
        assert!(verdict.annotations.is_empty());
    }

    #[test]
    fn problems_should_fail_with_one_annotation_each_at_its_position() {
        let verdict = run("name: a\nowner: ''\ncolour: red\n", &Snapshot::default());
        assert_eq!(verdict.conclusion, "failure");
        assert_eq!(verdict.title, "2 problems");
        assert_eq!(verdict.annotations.len(), 2);
        assert_eq!(verdict.annotations[0]["start_line"], 2);
        assert_eq!(verdict.annotations[0]["start_column"], 8);
        assert_eq!(
            verdict.annotations[0]["message"],
            "owner: must not be empty"
        );
    }

    #[test]
    fn a_taken_name_should_fail_naming_the_owner_at_the_name() {
        let registry = Snapshot {
            entries: Vec::new(),
            taken: vec![OwnedElsewhere {
                name: "a".into(),
                owner_repo: "acme/other".into(),
            }],
        };
        let verdict = run("owner: t\nname: a\n", &registry);
        assert_eq!(verdict.conclusion, "failure");
        assert_eq!(verdict.title, "1 problem");
        assert_eq!(
            verdict.annotations[0]["message"],
            "name: \"a\" is owned by acme/other"
        );
        assert_eq!(verdict.annotations[0]["start_line"], 2);
        assert!(verdict.summary.contains("acme/other"));
    }

    #[test]
    fn no_file_anywhere_should_be_neutral_and_a_gone_commit_too() {
        let absent = evaluate("project.yaml", "abc", &Parsed::Absent, &Snapshot::default());
        assert_eq!(
            (absent.conclusion, absent.title.as_str()),
            ("neutral", "no project.yaml")
        );
        let gone = evaluate(
            "project.yaml",
            "abcdef0123",
            &Parsed::CommitGone,
            &Snapshot::default(),
        );
        assert_eq!(gone.conclusion, "neutral");
        assert_eq!(gone.title, "commit abcdef0 no longer exists");
    }

    #[test]
    fn more_than_a_hundred_problems_should_be_counted_whole() {
        let text: String = (0..150).map(|k| format!("k{k}: x\n")).collect();
        let verdict = run(&format!("name: a\nowner: t\n{text}"), &Snapshot::default());
        assert_eq!(verdict.title, "150 problems");
        assert_eq!(verdict.annotations.len(), 101);
    }

    #[test]
    fn a_long_summary_should_be_cut_to_githubs_limit_at_a_line() {
        let long: String = (0..20_000).map(|k| format!("line {k}\n")).collect();
        let cut = clip_summary(long);
        assert!(cut.len() <= MAX_SUMMARY_BYTES);
        assert!(cut.ends_with("longer than GitHub shows)\n"));
    }

    #[test]
    fn a_summary_of_cjk_text_should_be_cut_by_bytes_at_a_line() {
        // 3 bytes a character: 30,000 characters are 90,000 bytes.
        let long: String = (0..3_000)
            .map(|_| format!("{}\n", "漢".repeat(9)))
            .collect();
        assert!(long.chars().count() < MAX_SUMMARY_BYTES);
        let cut = clip_summary(long.clone());
        assert!(cut.len() <= MAX_SUMMARY_BYTES, "{} bytes", cut.len());
        assert!(cut.ends_with("longer than GitHub shows)\n"));
        let kept = cut.trim_end_matches(|c| c != '…').trim_end_matches('…');
        assert!(long.starts_with(kept.trim_end_matches('\n')));
        assert!(
            kept.trim_end_matches('\n').ends_with(&"漢".repeat(9)),
            "cut at a line"
        );
    }

    #[test]
    fn invisible_characters_should_reach_github_escaped() {
        let text = "name: a\nowner: b\ndescription: \"x\u{202E}y\u{200B}\"\nbad\u{2066}: 1\n";
        let verdict = run(text, &Snapshot::default());
        assert_eq!(verdict.conclusion, "failure");
        let message = verdict.annotations[0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(message.contains("bad\\u{2066}"), "{message}");
        assert!(
            verdict.summary.contains("bad\\u{2066}"),
            "{}",
            verdict.summary
        );
        let valid = run(
            "name: a\nowner: b\ndescription: \"x\u{202E}y\"\n",
            &Snapshot::default(),
        );
        assert!(valid.summary.contains("x\\u{202E}y"), "{}", valid.summary);
        assert!(!valid.summary.contains('\u{202E}'));
    }
}
