//! `roster check [FILE…]`: validates project files locally, so that a
//! repository's own CI catches a broken file before Roster does (docs/operations.md#settings).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::project::invisible::escape_invisible;
use crate::project::{self, ProjectFiles, MAX_FILE_BYTES};

pub mod owners;

pub use owners::OwnerRules;

/// The files under `root` that match `patterns` (the server's
/// `ROSTER_PROJECT_FILES`), found as the local source finds a repository's
/// files, so a monorepo's CI checks exactly what Roster will read.
pub fn files_matching(root: &Path, patterns: &str) -> Result<Vec<PathBuf>, String> {
    let files = ProjectFiles::parse(patterns).map_err(|e| format!("--project-files: {e}"))?;
    let walked = crate::source::dir::matching_paths(root, "", &files)
        .map_err(|e| format!("cannot search {}: {e}", root.display()))?;
    match walked {
        crate::source::dir::Walked::Paths(paths) if paths.is_empty() => Err(format!(
            "no file under {} matches --project-files {files}",
            root.display()
        )),
        crate::source::dir::Walked::Paths(paths) => {
            Ok(paths.into_iter().map(PathBuf::from).collect())
        }
        crate::source::dir::Walked::FolderGone => {
            Err(format!("{} is not a folder", root.display()))
        }
        crate::source::dir::Walked::Refused(message) => Err(message),
    }
}

/// Checks the file at `path`, printing every problem one per line (labelled
/// with `path` as given) or a one-line summary when it is valid. Returns the
/// exit code: 0 when valid, 1 when not, 2 when the file could not be
/// checked at all (missing, unreadable, a folder), so that CI can tell a
/// broken file from a broken job.
pub fn run(path: &Path, out: &mut dyn Write) -> i32 {
    run_all(&[path], out)
}

/// Checks several files as the files of one repository: each is checked on
/// its own, and a name declared in two of them is a problem of the later
/// one in sorted order (the registry keeps it with the first). The exit
/// code is the worst: 2 when any file could not be read, else 1 when any
/// is invalid.
pub fn run_all(paths: &[&Path], out: &mut dyn Write) -> i32 {
    run_checked(paths, None, out)
}

/// [`run_all`], with each file's owners resolved by `owners` when given:
/// an owner that names nobody is a warning line, or a problem (exit 1)
/// under `require`.
pub fn run_checked(paths: &[&Path], owners: Option<&OwnerRules>, out: &mut dyn Write) -> i32 {
    let mut sorted: Vec<&Path> = paths.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut first_path: BTreeMap<String, String> = BTreeMap::new();
    let mut worst = 0;
    for path in sorted {
        let code = check_one(path, &mut first_path, owners, out);
        worst = worst.max(code);
    }
    worst
}

/// Checks one file; `first_path` holds, for each name seen so far, the
/// file that declared it first.
fn check_one(
    path: &Path,
    first_path: &mut BTreeMap<String, String>,
    owners: Option<&OwnerRules>,
    out: &mut dyn Write,
) -> i32 {
    let label = path.display().to_string();
    let bytes = match read(path, &label) {
        Ok(bytes) => bytes,
        Err(Failure::Problems(problems)) => return report(out, &problems.to_string(), 1),
        Err(Failure::Io(error)) => {
            return report(out, &format!("error: cannot read {label}: {error}"), 2)
        }
    };
    match project::parse(&label, &bytes) {
        Ok(file) => {
            let mut twice = Vec::new();
            for project in &file.projects {
                let name = project.name.as_str();
                match first_path.get(name) {
                    Some(first) => twice.push(format!(
                        "{label}: name: \"{name}\" is also declared in {first}, which keeps it"
                    )),
                    None => {
                        first_path.insert(name.to_owned(), label.clone());
                    }
                }
            }
            if !twice.is_empty() {
                return report(out, &twice.join("\n"), 1);
            }
            let text = String::from_utf8_lossy(&bytes);
            let notes = owners.map_or_else(Vec::new, |o| o.notes(&label, &file, &text));
            if !notes.is_empty() {
                let lines: Vec<String> = notes.iter().map(owners::line).collect();
                if notes.iter().any(|n| n.failure) {
                    return report(out, &lines.join("\n"), 1);
                }
                report(out, &lines.join("\n"), 0);
            }
            let count = file.projects.len();
            let names: Vec<&str> = file.projects.iter().map(|p| p.name.as_str()).collect();
            let noun = if count == 1 { "project" } else { "projects" };
            let line = format!("ok: {label}: {count} {noun} ({})", names.join(", "));
            report(out, &line, 0)
        }
        Err(problems) => report(out, &problems.to_string(), 1),
    }
}

enum Failure {
    Io(std::io::Error),
    Problems(project::Problems),
}

/// Reads at most one byte past the limit, so that a huge file is refused by
/// its size without being loaded.
fn read(path: &Path, label: &str) -> Result<Vec<u8>, Failure> {
    let file = File::open(path).map_err(Failure::Io)?;
    let size = file.metadata().map_err(Failure::Io)?.len();
    project::check_size(label, size).map_err(Failure::Problems)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(Failure::Io)?;
    Ok(bytes)
}

/// Writes `text` as the command's output, its bidirectional controls,
/// zero-width and control characters escaped as the pages and checks
/// escape them (a terminal would otherwise reorder or hide the text); an
/// unwritable output cannot be reported anywhere else, so it only leaves
/// the exit code to speak.
fn report(out: &mut dyn Write, text: &str, code: i32) -> i32 {
    let _ = writeln!(out, "{}", escape_invisible(text));
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &Path) -> (i32, String) {
        let mut out = Vec::new();
        let code = run(path, &mut out);
        (code, String::from_utf8(out).unwrap())
    }

    #[test]
    fn run_should_exit_0_and_name_the_projects_of_a_valid_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("project.yaml");
        std::fs::write(
            &path,
            "projects:\n  - name: a\n    owner: x\n  - name: b\n    owner: y\n",
        )
        .unwrap();
        let (code, out) = check(&path);
        assert_eq!(code, 0);
        assert_eq!(out, format!("ok: {}: 2 projects (a, b)\n", path.display()));
    }

    #[test]
    fn run_should_exit_1_and_print_every_problem_of_an_invalid_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("project.yaml");
        std::fs::write(&path, "name: Bad\nowner: \"\"\ncolour: red\n").unwrap();
        let (code, out) = check(&path);
        let label = path.display();
        assert_eq!(code, 1);
        assert_eq!(
            out,
            format!(
                "{label}:1:7: name: must contain only lowercase letters, digits and '-', found \"Bad\"\n\
                 {label}:2:8: owner: must not be empty\n\
                 {label}:3:1: colour: unknown field (expected one of name, owner, description, lifecycle, tags, links, labels, depends_on, system)\n"
            )
        );
    }

    #[test]
    fn run_should_escape_bidi_and_zero_width_characters_as_pages_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("project.yaml");
        std::fs::write(&path, "name: \"a\u{202E}b\u{200B}\"\nowner: t\n").unwrap();
        let (code, out) = check(&path);
        assert_eq!(code, 1);
        assert!(
            out.contains(r#"found "a\u{202E}b\u{200B}""#),
            "not escaped: {out:?}"
        );
        assert!(!out.contains(['\u{202E}', '\u{200B}']), "{out:?}");
    }

    #[test]
    fn run_should_print_the_first_hundred_problems_and_count_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("project.yaml");
        let mut yaml = String::from("name: a\nowner: b\n");
        for n in 0..250 {
            yaml.push_str(&format!("k{n}: 1\n"));
        }
        std::fs::write(&path, yaml).unwrap();
        let (code, out) = check(&path);
        let label = path.display().to_string();
        assert_eq!(code, 1);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 101, "{out}");
        for (n, line) in lines[..100].iter().enumerate() {
            let start = format!("{label}:{}:1: k{n}: unknown field", n + 3);
            assert!(line.starts_with(&start), "{line}");
        }
        assert_eq!(
            lines[100],
            format!("{label}: file: … and 150 more problems")
        );
    }

    #[test]
    fn run_should_exit_2_when_the_file_cannot_be_read() {
        let dir = tempfile::tempdir().unwrap();
        for path in [dir.path().join("missing.yaml"), dir.path().to_owned()] {
            let (code, out) = check(&path);
            assert_eq!(code, 2, "{}", path.display());
            assert!(
                out.starts_with(&format!("error: cannot read {}: ", path.display())),
                "{out}"
            );
            assert_eq!(out.lines().count(), 1);
        }
    }

    #[test]
    fn run_all_should_check_each_file_and_refuse_a_name_declared_twice() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        let b = dir.path().join("b.yaml");
        let c = dir.path().join("c.yaml");
        std::fs::write(&a, "name: api\nowner: x\n").unwrap();
        std::fs::write(
            &b,
            "projects:\n  - name: worker\n    owner: x\n  - name: api\n    owner: y\n",
        )
        .unwrap();
        std::fs::write(&c, "name: web\nowner: x\n").unwrap();
        let mut out = Vec::new();
        let code = run_all(&[&c, &b, &a], &mut out);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, 1);
        assert_eq!(
            out,
            format!(
                "ok: {a}: 1 project (api)\n\
                 {b}: name: \"api\" is also declared in {a}, which keeps it\n\
                 ok: {c}: 1 project (web)\n",
                a = a.display(),
                b = b.display(),
                c = c.display()
            )
        );
        let mut out = Vec::new();
        assert_eq!(
            run_all(&[&a, &dir.path().join("gone.yaml"), &b], &mut out),
            2
        );
    }

    #[test]
    fn run_should_refuse_an_oversized_file_by_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("project.yaml");
        std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES + 10]).unwrap();
        let (code, out) = check(&path);
        assert_eq!(code, 1);
        assert_eq!(
            out,
            format!(
                "{}: file: is 262154 bytes, more than the limit of 262144 bytes (256 KiB)\n",
                path.display()
            )
        );
    }
}
