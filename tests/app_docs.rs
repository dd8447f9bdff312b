//! `app.yml` is the one source of the App's permissions and events: the
//! README's step and the lists in docs/github-app.md (the table of what the
//! App asks for, and the by-hand registration) must say the same, or an App
//! registered from the docs could not do what Roster needs.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_yaml_ng::Value;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(permission, access)` pairs and events, as `app.yml` names them.
fn manifest() -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let app: Value = serde_yaml_ng::from_str(&read("app.yml")).unwrap_or_else(|e| panic!("{e}"));
    let permissions = app["default_permissions"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (text(k), text(v))
        })
        .collect();
    let events = app["default_events"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect();
    (permissions, events)
}

/// GitHub's form label ("Pull requests", "Check suite") as the manifest's
/// key (`pull_requests`, `check_suite`).
fn key(label: &str) -> String {
    label.trim().to_lowercase().replace(' ', "_")
}

/// GitHub's form access ("Read-only", "Read and write") as the manifest's.
fn access(label: &str) -> String {
    match label.trim() {
        "Read-only" | "read" => "read".to_owned(),
        "Read and write" | "write" => "write".to_owned(),
        other => panic!("unknown access {other:?}"),
    }
}

/// The `**bold**` pieces of a line.
fn bold(line: &str) -> Vec<&str> {
    line.split("**").skip(1).step_by(2).collect()
}

/// The line of `text` that starts (after spaces) with `start`.
fn line_starting<'t>(text: &'t str, start: &str) -> &'t str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?}"))
}

#[test]
fn the_by_hand_registration_should_grant_what_app_yml_asks_for() {
    let (permissions, events) = manifest();
    let guide = read("docs/github-app.md");
    let rows = [
        line_starting(&guide, "| Repository permissions |"),
        line_starting(&guide, "| Organization and account permissions |"),
    ];
    let listed: BTreeSet<(String, String)> = rows
        .into_iter()
        .flat_map(bold)
        .map(|p| {
            let (name, level) = p.split_once(':').unwrap_or_else(|| panic!("{p:?}"));
            (key(name), access(level))
        })
        .collect();
    assert_eq!(listed, permissions);
    let subscribed: BTreeSet<String> = bold(line_starting(&guide, "| Subscribe to events |"))
        .into_iter()
        .map(key)
        .collect();
    assert_eq!(subscribed, events);
}

#[test]
fn the_guide_tables_should_list_every_permission_and_event_of_app_yml() {
    let (permissions, events) = manifest();
    let guide = read("docs/github-app.md");
    let section = guide
        .split("## What the App asks for")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("no section \"What the App asks for\""));
    let rows = |header: &str| -> Vec<Vec<String>> {
        section
            .split(header)
            .nth(1)
            .unwrap_or_else(|| panic!("no table {header:?}"))
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.split('|').skip(1).map(|c| c.trim().to_owned()).collect())
            .collect()
    };
    let tabled: BTreeSet<(String, String)> = rows("| permission | access | why |")
        .iter()
        .map(|cells| (key(&cells[0]), access(&cells[1])))
        .collect();
    assert_eq!(tabled, permissions);
    let tabled: BTreeSet<String> = rows("| event | why |")
        .iter()
        .map(|cells| key(&cells[0]))
        .collect();
    assert_eq!(tabled, events);
}

#[test]
fn the_readme_step_should_name_every_permission_and_event_of_app_yml() {
    let (permissions, events) = manifest();
    let readme = read("README.md");
    let step = readme
        .split("1. Register the GitHub App")
        .nth(1)
        .and_then(|s| s.split("\n2. ").next())
        .unwrap_or_else(|| panic!("README has no step \"Register the GitHub App\""));
    let (asked, subscribed) = step
        .split_once("events:")
        .unwrap_or_else(|| panic!("the step names no events: {step}"));
    let code = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let listed: BTreeSet<(String, String)> = code(asked)
        .iter()
        .filter_map(|c| c.split_once(": "))
        .map(|(name, level)| (name.to_owned(), access(level)))
        .collect();
    assert_eq!(listed, permissions);
    let named: BTreeSet<String> = code(subscribed)
        .into_iter()
        .filter(|c| !c.contains('.') && !c.contains('/'))
        .collect();
    assert_eq!(named, events);
}

/// The subcommands `roster --help` lists (clap's "Commands:" section).
fn subcommands() -> BTreeSet<String> {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_roster"))
        .arg("--help")
        .output()
        .expect("roster --help runs");
    let text = String::from_utf8_lossy(&help.stdout).into_owned();
    text.split("Commands:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Commands: in\n{text}"))
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_should_count_and_list_every_command() {
    let commands = subcommands();
    assert!(commands.contains("serve"), "{commands:?}");
    let readme = read("README.md");
    let words = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let line = line_starting(&readme, "One binary, ");
    let said = line
        .trim_start_matches("One binary, ")
        .split_whitespace()
        .next()
        .unwrap_or_default();
    assert_eq!(
        words.iter().position(|w| *w == said).map(|n| n + 1),
        Some(commands.len()),
        "{line:?} for {commands:?}"
    );
    let listed: BTreeSet<String> = readme
        .split(line)
        .nth(1)
        .unwrap_or_default()
        .split("\n\n")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("- `roster "))
        .filter_map(|l| l.split([' ', '`']).next())
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, commands);
}

#[test]
fn the_guide_should_go_from_nothing_to_a_working_app_in_the_steps_it_counts() {
    let guide = read("docs/github-app.md");
    let heading = line_starting(&guide, "## From nothing to a working App on Kubernetes: ");
    let said: usize = heading
        .trim_start_matches("## From nothing to a working App on Kubernetes: ")
        .trim_end_matches(" steps")
        .parse()
        .unwrap_or_else(|e| panic!("{heading:?}: {e}"));
    assert!(said <= 8, "{heading:?}: at most eight steps");
    let section = guide
        .split(heading)
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    // A step is a numbered line at the margin: "N. **What.** …".
    let numbers: Vec<usize> = section
        .lines()
        .filter_map(|l| l.split_once(". **"))
        .filter_map(|(n, _)| n.parse().ok())
        .collect();
    assert_eq!(numbers, (1..=said).collect::<Vec<_>>(), "{heading:?}");
    // Each step is written once: no other numbered list in the guide, and
    // operations.md points at the steps instead of repeating them.
    let elsewhere = guide.replace(section, "");
    let numbered = elsewhere
        .lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
        })
        .count();
    assert_eq!(
        numbered, 0,
        "the guide has numbered steps outside the {said}"
    );
    let anchor: String = heading
        .trim_start_matches("## ")
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect();
    let operations = read("docs/operations.md");
    assert!(
        operations.contains(&format!("github-app.md#{anchor}")),
        "docs/operations.md refers to the steps (#{anchor})"
    );
    assert!(
        !operations.contains("kubectl create secret generic"),
        "docs/operations.md repeats a step"
    );
}
