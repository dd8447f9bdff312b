//! The check run of a commit that touches some of a repository's project
//! files (`ROSTER_PROJECT_FILES` with patterns): each touched file is read
//! by the rules, the files left as they are keep their entries, names stay
//! unique across the registry and across the files, and the preview says
//! what merging would add, change (a moved entry too: its `path`), remove
//! and keep.

use std::collections::{BTreeMap, BTreeSet};

use super::preview::{plural, FieldChange, Preview, RegisteredEntry, Snapshot};
use super::verdict::{evaluate, failing, problem_count, shown, Parsed, Verdict};
use super::{name_positions, Problem, Project};

/// One touched project file at the evaluated commit.
#[derive(Debug, Clone)]
pub struct TouchedFile {
    pub path: String,
    /// `Parsed::Absent` for a file the commit removes.
    pub parsed: Parsed,
}

/// What the check says about the touched files: `untouched` counts the
/// matching files the evaluation did not read (beyond the bound of files
/// one check reads), named in the summary.
pub fn evaluate_files(
    sha: &str,
    touched: &[TouchedFile],
    registry: &Snapshot,
    untouched: usize,
) -> Verdict {
    if touched
        .iter()
        .any(|t| matches!(t.parsed, Parsed::CommitGone))
    {
        return evaluate("project files", sha, &Parsed::CommitGone, registry);
    }
    shown(verdict_on_files(touched, registry, untouched))
}

/// The names each touched file declares: the registry is asked who owns
/// them.
pub fn declared_names(touched: &[TouchedFile]) -> Vec<String> {
    let mut names: Vec<String> = touched.iter().flat_map(|t| t.parsed.names()).collect();
    names.sort();
    names.dedup();
    names
}

/// One touched file as the summary lists it.
struct FileLine {
    path: String,
    state: String,
}

fn verdict_on_files(touched: &[TouchedFile], registry: &Snapshot, untouched: usize) -> Verdict {
    let touched_paths: BTreeSet<&str> = touched.iter().map(|t| t.path.as_str()).collect();
    // Names the files left as they are hold: they keep them.
    let mut holder: BTreeMap<&str, &str> = registry
        .entries
        .iter()
        .filter(|e| !touched_paths.contains(e.path.as_str()))
        .map(|e| (e.name.as_str(), e.path.as_str()))
        .collect();
    let taken: BTreeMap<&str, &str> = registry
        .taken
        .iter()
        .map(|t| (t.name.as_str(), t.owner_repo.as_str()))
        .collect();
    let mut files: Vec<&TouchedFile> = touched.iter().collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    // Entries of invalid files stay as they are.
    let kept: BTreeSet<&str> = files
        .iter()
        .filter(|t| matches!(t.parsed, Parsed::Problems(_)))
        .flat_map(|t| {
            registry
                .entries
                .iter()
                .filter(|e| e.path == t.path)
                .map(|e| e.name.as_str())
        })
        .collect();
    for name in &kept {
        if let Some(entry) = registry.entries.iter().find(|e| e.name == *name) {
            holder.entry(name).or_insert(entry.path.as_str());
        }
    }
    let mut problems: Vec<Problem> = Vec::new();
    let mut desired: Vec<(&Project, &str)> = Vec::new();
    let mut lines = Vec::new();
    for file in &files {
        let path = file.path.as_str();
        let state = match &file.parsed {
            Parsed::Absent | Parsed::CommitGone => "removed".to_owned(),
            Parsed::Problems(found) => {
                let count = problem_count(found);
                problems.extend(found.iter().cloned());
                format!("{count} {}", plural(count, "problem", "problems"))
            }
            Parsed::Valid { file: parsed, text } => {
                let positions = name_positions(text);
                let mut clashes = 0;
                for project in &parsed.projects {
                    let name = project.name.as_str();
                    let clash = match (holder.get(name), taken.get(name)) {
                        (Some(other), _) if *other != path => {
                            Some(format!("\"{name}\" is also declared in {other}"))
                        }
                        (_, Some(owner)) => Some(format!("\"{name}\" is owned by {owner}")),
                        _ => None,
                    };
                    match clash {
                        Some(message) => {
                            clashes += 1;
                            let at = positions.iter().find(|p| p.name == name);
                            problems.push(Problem {
                                file: path.to_owned(),
                                line: at.map(|p| p.line),
                                column: at.map(|p| p.column),
                                field: at.map_or_else(|| "name".to_owned(), |p| p.field.clone()),
                                message,
                            });
                        }
                        None => {
                            holder.insert(name, path);
                            desired.push((project, path));
                        }
                    }
                }
                let count = parsed.projects.len();
                let mut state = format!("{count} {}", plural(count, "entry", "entries"));
                if clashes > 0 {
                    state.push_str(&format!(
                        ", {clashes} {} (a `conflict`)",
                        plural(clashes, "name taken", "names taken")
                    ));
                }
                state
            }
        };
        lines.push(FileLine {
            path: path.to_owned(),
            state,
        });
    }
    let preview = compare(registry, &touched_paths, &kept, &desired);
    summarize(&lines, &problems, &preview, registry, untouched)
}

/// The preview of the touched files: their entries now against the
/// entries the valid ones declare; an entry whose name moved between two
/// touched files is changed, its `path` old → new.
fn compare(
    registry: &Snapshot,
    touched: &BTreeSet<&str>,
    kept: &BTreeSet<&str>,
    desired: &[(&Project, &str)],
) -> Preview {
    let old: Vec<RegisteredEntry> = registry
        .entries
        .iter()
        .filter(|e| touched.contains(e.path.as_str()) && !kept.contains(e.name.as_str()))
        .cloned()
        .collect();
    let projects: Vec<Project> = desired.iter().map(|(p, _)| (*p).clone()).collect();
    let mut preview = Preview::compare(&projects, &old, &[]);
    let new_path: BTreeMap<&str, &str> = desired
        .iter()
        .map(|(p, path)| (p.name.as_str(), *path))
        .collect();
    let moved = |name: &str| -> Option<FieldChange> {
        let before = old.iter().find(|e| e.name == name)?;
        let after = new_path.get(name)?;
        (before.path != *after).then(|| FieldChange {
            field: "path",
            old: before.path.clone(),
            new: (*after).to_owned(),
        })
    };
    for (name, changes) in &mut preview.changed {
        if let Some(change) = moved(name) {
            changes.insert(0, change);
        }
    }
    let unchanged = std::mem::take(&mut preview.unchanged);
    for name in unchanged {
        match moved(&name) {
            Some(change) => preview.changed.push((name, vec![change])),
            None => preview.unchanged.push(name),
        }
    }
    preview.changed.sort_by(|a, b| a.0.cmp(&b.0));
    preview
}

fn summarize(
    lines: &[FileLine],
    problems: &[Problem],
    preview: &Preview,
    registry: &Snapshot,
    untouched: usize,
) -> Verdict {
    if lines.is_empty() {
        return no_file_touched(registry);
    }
    let mut summary = format!(
        "This commit touches {} project {}:\n\n",
        lines.len(),
        plural(lines.len(), "file", "files")
    );
    for line in lines {
        summary.push_str(&format!("- `{}`: {}\n", line.path, line.state));
    }
    if untouched > 0 {
        summary.push_str(&format!(
            "\n{untouched} more touched project {} not previewed here (a check reads at \
             most {}); the default branch's check shows them once merged.\n",
            plural(untouched, "file is", "files are"),
            lines.len()
        ));
    }
    summary.push('\n');
    if problems.is_empty() {
        summary.push_str(&preview.markdown());
        return Verdict {
            conclusion: "success",
            title: preview.counts(),
            summary,
            annotations: Vec::new(),
        };
    }
    summary.push_str(
        "Problems (an invalid file's entries stay as they are until it is fixed; a name \
         taken elsewhere is a `conflict`):\n\n```\n",
    );
    let after = format!("\nThe rest, once merged:\n\n{}", preview.markdown());
    failing(summary, problems, problem_count(problems), &after)
}

/// A commit that touches no project file: the registry's entries stay as
/// they are (`neutral` when the repository has none).
fn no_file_touched(registry: &Snapshot) -> Verdict {
    if registry.entries.is_empty() {
        return Verdict {
            conclusion: "neutral",
            title: "no project file".into(),
            summary: "This commit touches no project file and the registry has no entry for \
                      this repository: nothing to check.\n"
                .into(),
            annotations: Vec::new(),
        };
    }
    let preview = Preview {
        unchanged: registry.entries.iter().map(|e| e.name.clone()).collect(),
        ..Preview::default()
    };
    Verdict {
        conclusion: "success",
        title: preview.counts(),
        summary: format!(
            "This commit touches no project file.\n\n{}",
            preview.markdown()
        ),
        annotations: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
