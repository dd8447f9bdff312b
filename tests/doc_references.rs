//! What the docs name exists: a section (`contract.md#bounds`, or the
//! doc's name, a comma and the section's title in quotes), a file a Markdown link points at, a
//! setting (`ROSTER_…`, `GITHUB_…`), a route of Roster's HTTP API. Read as
//! text from README.md, docs/ and the code's comments, so that a rename on
//! one side fails here instead of sending a reader nowhere.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;
use regex::Regex;

use roster::config::ServeArgs;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with one of `extensions`.
fn files(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", ".git", "migrations", "node_modules", "fixtures"]
                .contains(&name.as_str())
            {
                files(&path, extensions, out);
            }
        } else if extensions.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// README.md and every Markdown file under docs/, with their text.
fn docs() -> Vec<(String, String)> {
    let mut paths = vec![root().join("README.md")];
    files(&root().join("docs"), &[".md"], &mut paths);
    files(&root().join("examples"), &[".md"], &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (relative(&p), text)
        })
        .collect()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The text of `docs/NAME` (or of `NAME` at the root).
fn doc_text(file: &str) -> String {
    let path = if file.contains('/') {
        root().join(file)
    } else if root().join("docs").join(file).exists() {
        root().join("docs").join(file)
    } else {
        root().join(file)
    };
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The headings of `docs/NAME` (or of `NAME` at the root), as text, and
/// the bold titles that open a paragraph (`**Title (date).**`), which the
/// code cites by their title.
fn headings(file: &str) -> Vec<String> {
    let text = doc_text(file);
    let mut in_code = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        if line.starts_with('#') {
            found.push(line.trim_start_matches('#').trim().replace('`', ""));
        } else if let Some(bold) = line.strip_prefix("**").and_then(|l| l.split("**").next()) {
            let title = bold.split(" (").next().unwrap_or(bold);
            found.push(title.trim_end_matches('.').to_owned());
        }
    }
    found
}

#[test]
fn every_section_a_file_names_should_be_a_heading_of_that_doc() {
    let mut texts = docs();
    let mut code = Vec::new();
    for dir in ["src", "tests", "benches", "deploy", "scripts"] {
        files(
            &root().join(dir),
            &[".rs", ".yaml", ".yml", ".html"],
            &mut code,
        );
    }
    code.push(root().join("app.yml"));
    for path in code {
        if let Ok(text) = std::fs::read_to_string(&path) {
            texts.push((relative(&path), text));
        }
    }
    let anchor = Regex::new(r"\b([a-z-]+\.md)#([a-z0-9_-]+)").expect("regex");
    let quoted = Regex::new(r#"\b([a-z-]+\.md)[,:] "([^"\n]+)""#).expect("regex");
    let mut missing = Vec::new();
    for (file, text) in &texts {
        for found in anchor.captures_iter(text) {
            let (doc, section) = (&found[1], &found[2]);
            if !headings(doc).iter().any(|h| slug(h) == section) {
                missing.push(format!("{file}: {doc}#{section}"));
            }
        }
        for found in quoted.captures_iter(text) {
            let (doc, section) = (&found[1], &found[2]);
            // "Words…" names a section, or a paragraph, by how it starts.
            let found = match section.strip_suffix('…') {
                Some(start) => {
                    headings(doc).iter().any(|h| h.starts_with(start))
                        || doc_text(doc).lines().any(|l| l.starts_with(start))
                }
                None => headings(doc).iter().any(|h| h == section),
            };
            if !found {
                missing.push(format!("{file}: {doc}, \"{section}\""));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "sections that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_file_a_doc_links_to_should_exist() {
    let link = Regex::new(r"\]\(([^)#\s]+)(#[^)]*)?\)").expect("regex");
    let mut missing = Vec::new();
    for (file, text) in docs() {
        let folder = root().join(&file);
        let folder = folder.parent().unwrap_or(Path::new("."));
        for found in link.captures_iter(&text) {
            let target = &found[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !folder.join(target).exists() {
                missing.push(format!("{file}: {target}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "links to nothing:\n{}",
        missing.join("\n")
    );
}

/// Variables the tests, benchmarks, scripts and the build (`build.rs`:
/// `ROSTER_REVISION`) read: named in the docs, not settings of the server.
const NOT_SETTINGS: [&str; 10] = [
    "ROSTER_REVISION",
    "ROSTER_UPDATE_SCREENSHOTS",
    "ROSTER_SCHEMATHESIS",
    "ROSTER_BENCH_SMOKE",
    "ROSTER_BENCH_BINARY",
    "ROSTER_BENCH_REPOS",
    "ROSTER_BENCH_BUDGET",
    "ROSTER_BENCH_LOG",
    "ROSTER_BENCH_RUST_LOG",
    "ROSTER_TEST_RUN",
];

#[test]
fn every_setting_a_doc_names_should_be_one_the_server_reads() {
    let command = ServeArgs::augment_args(clap::Command::new("serve"));
    let known: BTreeSet<String> = command
        .get_arguments()
        .filter_map(|arg| arg.get_env())
        .map(|env| env.to_string_lossy().into_owned())
        .chain(NOT_SETTINGS.map(str::to_owned))
        .collect();
    let setting = Regex::new(r"\b((?:ROSTER|GITHUB)_[A-Z0-9_]*[A-Z0-9])\b").expect("regex");
    let mut unknown = BTreeSet::new();
    for (file, text) in docs() {
        for found in setting.captures_iter(&text) {
            if !known.contains(&found[1]) {
                unknown.insert(format!("{file}: {}", &found[1]));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "settings Roster does not read:\n{unknown:#?}"
    );
}

/// Every path literal of the code: where routes are declared.
fn paths_in_code() -> BTreeSet<String> {
    let mut sources = Vec::new();
    files(&root().join("src"), &[".rs"], &mut sources);
    let literal = Regex::new(r#""(/[A-Za-z0-9_./{}-]*)""#).expect("regex");
    sources
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            literal
                .captures_iter(&text)
                .map(|c| c[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_route_the_docs_name_should_be_served() {
    let served = paths_in_code();
    assert!(
        served.contains("/api/v1/repos/{owner}/{name}"),
        "{served:?}"
    );
    // A route's `{param}` stands for any one segment, so an example such
    // as `/api/v1/repos/local/amp` is a route served.
    let param = Regex::new(r"\\\{[a-z_]+\\\}").expect("regex");
    let patterns: Vec<Regex> = served
        .iter()
        .filter_map(|p| {
            let pattern = param.replace_all(&regex::escape(p), "[^/]+").into_owned();
            Regex::new(&format!("^{pattern}$")).ok()
        })
        .collect();
    // `/api/v1/…` names the API as a whole.
    let is_served = |path: &str| {
        path.ends_with("...") || path.ends_with('…') || patterns.iter().any(|p| p.is_match(path))
    };
    let route = Regex::new(r"`(?:GET|POST|PUT|PATCH|DELETE) (/[^`?\s]*)").expect("regex");
    let contract = std::fs::read_to_string(root().join("docs/contract.md")).expect("contract");
    let table = contract
        .split("## HTTP routes")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("the contract's HTTP routes section");
    let mut missing = BTreeSet::new();
    // The contract's table names only Roster's routes: each must exist.
    for found in route.captures_iter(table) {
        if !is_served(&found[1]) {
            missing.insert(format!("docs/contract.md: {}", &found[1]));
        }
    }
    // Elsewhere GitHub's routes are named too; Roster's API is under /api/v1.
    for (file, text) in docs() {
        for found in route.captures_iter(&text) {
            let path = &found[1];
            if path.starts_with("/api/v1") && !is_served(path) {
                missing.insert(format!("{file}: {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "routes Roster does not serve:\n{missing:#?}"
    );
}

/// Every `roster SUBCOMMAND --flag …` a doc shows names a subcommand and
/// flags the binary takes, as its own `--help` says.
#[test]
fn every_command_line_a_doc_shows_should_be_one_the_binary_takes() {
    let shown = Regex::new(r"`roster ([a-z]+)((?: [^`]*)?)`").expect("regex");
    let flag = Regex::new(r"(--[a-z][a-z-]*)").expect("regex");
    let mut helps = std::collections::BTreeMap::new();
    let mut wrong = BTreeSet::new();
    let mut seen = 0;
    for (file, text) in docs() {
        for found in shown.captures_iter(&text) {
            // A line of the log, not of the shell.
            if &found[0] == "`roster starting`" {
                continue;
            }
            seen += 1;
            let command = found[1].to_owned();
            let help = helps.entry(command.clone()).or_insert_with(|| {
                let output = std::process::Command::new(env!("CARGO_BIN_EXE_roster"))
                    .args([command.as_str(), "--help"])
                    .output()
                    .expect("roster runs");
                output
                    .status
                    .success()
                    .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
            });
            let Some(help) = help else {
                wrong.insert(format!("{file}: no subcommand `roster {command}`"));
                continue;
            };
            for f in flag.captures_iter(&found[2]) {
                if !help.contains(&f[1]) {
                    wrong.insert(format!("{file}: `roster {command}` takes no {}", &f[1]));
                }
            }
        }
    }
    assert!(seen > 5, "the pattern found only {seen} command lines");
    assert!(
        wrong.is_empty(),
        "command lines the binary does not take:\n{wrong:#?}"
    );
}
