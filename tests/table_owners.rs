//! Each table has one owner: only the files listed for it here hold SQL
//! that names it (docs/architecture.md, "Who owns which table"). Everyone
//! else goes through the owner's functions, so a table's statements, and
//! the locks and invariants they keep, can be read in one place.
//!
//! The check reads `src/` as text: outside comments and inline test
//! modules, a table name right after `from`, `into`, `update`, `join` or
//! `table` in a string literal counts as SQL on that table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Table → the paths (under `src/`, a folder ending in `/`) allowed to
/// name it in SQL.
const OWNERS: &[(&str, &[&str])] = &[
    ("repositories", &["registry/"]),
    ("entries", &["registry/"]),
    ("events", &["registry/"]),
    ("holds", &["registry/"]),
    ("queue", &["db/queue.rs", "db/queue/", "db/fence.rs"]),
    ("listing_schedule", &["db/queue.rs", "db/queue/"]),
    ("listed_partitions", &["db/queue.rs", "db/queue/"]),
    (
        "deliveries",
        &["intake/deliveries.rs", "intake/retention.rs"],
    ),
    ("redelivery_schedule", &["intake/redelivery.rs"]),
    ("walked_trees", &["github/walked_trees.rs"]),
    ("revoked_sessions", &["web/revocation.rs"]),
    ("changes", &["registry/changes/"]),
    ("change_head", &["registry/changes/"]),
    ("notify_targets", &["notify/outbox.rs", "notify/stall.rs"]),
    (
        "check_requests",
        &["registry/check_records/check_requests.rs"],
    ),
    (
        "check_runs",
        &[
            "registry/check_records/check_runs.rs",
            "registry/check_records/check_requests.rs",
        ],
    ),
    (
        "check_permissions",
        &["registry/check_records/check_runs.rs"],
    ),
    (
        "check_evaluations",
        &["registry/check_records/check_requests.rs"],
    ),
    (
        "repo_visibility",
        &[
            "registry/check_records/check_requests.rs",
            "registry/check_records/read_only.rs",
            "registry/check_records/relation_check.rs",
            "registry/visibility.rs",
        ],
    ),
    ("setup_app", &["setup/store.rs"]),
    ("setup_tokens", &["setup/store.rs"]),
    ("setup_states", &["setup/store.rs"]),
    ("installation_grants", &["github/grants.rs"]),
    (
        "directory_orgs",
        &[
            "directory/db/",
            "directory/lookup.rs",
            "directory/follow.rs",
        ],
    ),
    (
        "directory_org_logins",
        &["directory/db/", "directory/lookup.rs"],
    ),
    ("directory_teams", &["directory/db/", "directory/lookup.rs"]),
    ("directory_changes", &["directory/db/"]),
    (
        "directory_team_slugs",
        &["directory/db/", "directory/lookup.rs"],
    ),
    (
        "directory_members",
        &["directory/db/", "directory/lookup.rs"],
    ),
];

const SQL_WORDS: &[&str] = &["from", "into", "update", "join", "table"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its inline test module
/// (`#[cfg(test)] mod tests { … }`, at the end of a file).
fn code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        if trimmed.starts_with("#[cfg(test)]") && next.starts_with("mod ") && next.ends_with('{') {
            break;
        }
        if !trimmed.starts_with("//") {
            kept.push(*line);
        }
    }
    kept.join("\n")
}

/// The contents of the string literals in `code`, one after another (SQL
/// lives in strings; `#[from] deliveries::Error` is not SQL).
fn strings(code: &str) -> String {
    let code = code.replace("'\"'", "").replace("'\\\"'", "");
    let mut out = String::new();
    let mut inside = false;
    let mut escaped = false;
    for c in code.chars() {
        match (inside, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => {
                inside = !inside;
                out.push('\n');
            }
            (true, false, c) => out.push(c),
            _ => {}
        }
    }
    out
}

/// The tables the string literals of `code` name in SQL.
fn tables_named(code: &str, tables: &BTreeSet<&str>) -> BTreeSet<String> {
    let lower = strings(code).to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|pair| SQL_WORDS.contains(&pair[0]) && tables.contains(pair[1]))
        .map(|pair| pair[1].to_owned())
        .collect()
}

/// Every table the migrations create.
fn created_tables() -> BTreeSet<String> {
    let mut files = Vec::new();
    if let Ok(entries) = fs::read_dir(root().join("migrations")) {
        files.extend(entries.flatten().map(|e| e.path()));
    }
    let mut tables = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap_or_default().to_lowercase();
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for three in words.windows(3) {
            if three[0] == "create" && three[1] == "table" {
                tables.insert(three[2].to_owned());
            }
        }
    }
    tables
}

#[test]
fn every_table_should_have_an_owner() {
    let created = created_tables();
    assert!(created.contains("repositories"), "{created:?}");
    let owned: BTreeSet<String> = OWNERS.iter().map(|(t, _)| (*t).to_owned()).collect();
    let orphans: Vec<&String> = created.difference(&owned).collect();
    assert!(orphans.is_empty(), "tables without an owner: {orphans:?}");
}

#[test]
fn only_a_tables_owner_should_hold_sql_on_it() {
    let tables: BTreeSet<&str> = OWNERS.iter().map(|(t, _)| *t).collect();
    let owners: BTreeMap<&str, &[&str]> = OWNERS.iter().copied().collect();
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut trespass = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = fs::read_to_string(file).unwrap_or_default();
        for table in tables_named(&code(&text), &tables) {
            let allowed = owners.get(table.as_str()).copied().unwrap_or_default();
            if !allowed.iter().any(|owner| relative.starts_with(owner)) {
                trespass.push(format!("{relative}: {table}"));
            }
        }
    }
    assert!(files.len() > 50, "read {} files", files.len());
    assert!(
        trespass.is_empty(),
        "SQL outside the table's owner: {trespass:#?}"
    );
}

#[test]
fn sql_on_a_table_should_be_recognised() {
    let tables: BTreeSet<&str> = ["repositories", "queue"].into_iter().collect();
    let found = tables_named(
        "sqlx::query(\"select id FROM repositories where x\")\n\
         #[error(transparent)] Queue(#[from] queue::Error), let c = '\"';",
        &tables,
    );
    assert_eq!(found, BTreeSet::from(["repositories".to_owned()]));
    // Comments and the inline test module do not count.
    let code =
        code("let a = 1;\n// select * from queue\n#[cfg(test)]\nmod tests {\n  \"from queue\"\n}");
    assert_eq!(tables_named(&code, &tables), BTreeSet::new());
}
