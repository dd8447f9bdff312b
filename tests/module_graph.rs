//! The generic core (`src/controller/`) names no store: neither `sqlx`
//! nor `crate::db`, so a queue's or a handler's own errors stay theirs
//! and the core can be read, and tested, without a database.
//!
//! The modules of `src/` import each other without cycles: neither the
//! top-level modules (`registry`, `github`, `web`, …) nor the files of one
//! module group (`registry/*`, `intake/*`, …). A cycle makes two
//! modules one in all but name: neither can be understood, changed or
//! tested without the other.
//!
//! The graph is read from the source itself: every `crate::…` and
//! `super::…` path outside comments and test modules (inline, or a file
//! of their own: `tests.rs`, `…/tests/*.rs`), which may use the test kit
//! (`src/testing.rs`) whatever it imports. A name a group
//! re-exports from its `mod.rs` (`use super::RegistryError`) counts as an
//! import of the file that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Edges of a cycle that code outside the modules checked here still
/// causes; each is being removed by its owners. Nothing else may join.
const ALLOWED: &[(&str, &str)] = &[];

/// The same within a module group: (group, from, to).
const ALLOWED_IN_GROUPS: &[(&str, &str, &str)] = &[];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, as paths relative to `src/`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests" || name == "tests.rs" {
            // A test module: test code, not an import of the module.
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            if let Ok(relative) = path.strip_prefix(src()) {
                out.push(relative.to_path_buf());
            }
        }
    }
}

/// The code of a file without comments and without its inline test module
/// (`#[cfg(test)] mod tests { … }`, which sits at the end of a file).
fn code(path: &Path) -> String {
    let text = fs::read_to_string(src().join(path)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        if trimmed.starts_with("#[cfg(test)]") && next.starts_with("mod ") && next.ends_with('{') {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        kept.push(*line);
    }
    kept.join("\n")
}

/// Each identifier that follows `prefix` in `code`, with the rest of the
/// path (`crate::a::b` gives `a::b`), braces expanded one level
/// (`super::{a, b::c}` gives `a` and `b::c`).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().last();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(inner) = rest.strip_prefix('{') {
            let end = inner.find('}').unwrap_or(inner.len());
            for item in inner[..end].split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    found.push(path_of(item));
                }
            }
        } else {
            found.push(path_of(rest));
        }
    }
    found
}

/// The leading `a::b::c` of `text`.
fn path_of(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect::<String>()
        .trim_end_matches(':')
        .to_owned()
}

/// The top-level module a file belongs to (`registry` for
/// `registry/guard.rs`, `app` for `app.rs`).
fn top_of(path: &Path) -> String {
    let first = path
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_owned()
}

/// The module path of a file (`registry/guard.rs` is `registry::guard`,
/// `registry/mod.rs` is `registry`).
fn module_of(path: &Path) -> Vec<String> {
    let mut parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_owned();
        if stem != "mod" && stem != "lib" && stem != "main" {
            parts.push(stem);
        }
    }
    parts
}

fn top_level_graph(files: &[PathBuf]) -> Graph {
    let mut graph = Graph::new();
    for path in files {
        let from = top_of(path);
        if from == "lib" || from == "main" {
            continue;
        }
        for target in paths_after(&code(path), "crate::") {
            let to = target.split("::").next().unwrap_or("").to_owned();
            if !to.is_empty() && to != from {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// The files of every module group (a folder), keyed by the group's path,
/// each file by its name in the group.
fn groups(files: &[PathBuf]) -> BTreeMap<Vec<String>, BTreeSet<String>> {
    let mut groups: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let module = module_of(path);
        if module.len() < 2 {
            continue;
        }
        let (name, group) = module.split_last().expect("a module path of two parts");
        groups
            .entry(group.to_vec())
            .or_default()
            .insert(name.clone());
    }
    groups
}

/// What a group's root re-exports: name → the member file it comes from
/// (`pub use guard::DeletionGuard` maps `DeletionGuard` to `guard`).
fn reexports(root: &str, members: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in root.split(';') {
        let statement = statement.trim();
        let Some(used) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let used = used.strip_prefix("self::").unwrap_or(used);
        let Some((member, rest)) = used.split_once("::") else {
            continue;
        };
        if !members.contains(member) {
            continue;
        }
        let rest = rest.trim().trim_start_matches('{').trim_end_matches('}');
        for item in rest.split(',') {
            let item = item.trim();
            let name = item.rsplit(" as ").next().unwrap_or(item);
            let name = name.rsplit("::").next().unwrap_or(name).trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), member.to_owned());
            }
        }
    }
    names
}

/// The imports between the member files of one group.
fn group_graph(group: &[String], members: &BTreeSet<String>, files: &[PathBuf]) -> Graph {
    let folder: PathBuf = group.iter().collect();
    let root = [
        folder.join("mod.rs"),
        PathBuf::from(format!("{}.rs", folder.display())),
    ]
    .into_iter()
    .find(|p| src().join(p).exists())
    .map(|p| code(&p))
    .unwrap_or_default();
    let names = reexports(&root, members);
    let resolve = |path: &str| -> Option<String> {
        let first = path.split("::").next().unwrap_or("");
        if members.contains(first) {
            Some(first.to_owned())
        } else {
            names.get(first).cloned()
        }
    };
    let crate_prefix = format!("crate::{}::", group.join("::"));
    let mut graph = Graph::new();
    for path in files {
        let module = module_of(path);
        let Some((from, parent)) = module.split_last() else {
            continue;
        };
        if parent != group {
            continue;
        }
        let code = code(path);
        let targets = paths_after(&code, "super::")
            .into_iter()
            .filter(|p| !p.starts_with("super"))
            .chain(paths_after(&code, &crate_prefix));
        for target in targets {
            if let Some(to) = resolve(&target).filter(|to| to != from) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// One cycle of `graph`, if it has any, as the modules along it.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, done, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, graph, &mut done, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn all_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files.sort();
    files
}

#[test]
fn top_level_modules_should_not_import_each_other_in_a_cycle() {
    let files = all_files();
    let mut graph = top_level_graph(&files);
    for (from, to) in ALLOWED {
        if let Some(targets) = graph.get_mut(*from) {
            targets.remove(*to);
        }
    }
    assert!(graph.contains_key("registry") && graph.contains_key("github"));
    assert_eq!(
        find_cycle(&graph),
        None,
        "top-level import graph: {graph:#?}"
    );
}

#[test]
fn the_files_of_a_module_group_should_not_import_each_other_in_a_cycle() {
    let files = all_files();
    let groups = groups(&files);
    assert!(groups.contains_key(&vec!["registry".to_owned()]));
    let mut cycles = Vec::new();
    for (group, members) in &groups {
        let name = group.join("/");
        let mut graph = group_graph(group, members, &files);
        for (within, from, to) in ALLOWED_IN_GROUPS {
            if *within == name {
                if let Some(targets) = graph.get_mut(*from) {
                    targets.remove(*to);
                }
            }
        }
        if let Some(cycle) = find_cycle(&graph) {
            cycles.push(format!("{name}: {}", cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

/// What the generic core may not name: the SQL crate and the module that
/// holds the PostgreSQL code.
const STORES: [&str; 2] = ["sqlx", "crate::db"];

/// Each `(file, name)` where the code of `files` names one of [`STORES`],
/// as a path (`sqlx::Error`, `crate::db::queue`) or a `use`.
fn stores_named(files: &[PathBuf]) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for file in files {
        let code = code(file);
        for store in STORES {
            let named = code.match_indices(store).any(|(at, _)| {
                let before = code[..at].chars().last();
                let after = code[at + store.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if named {
                found.push((file.display().to_string(), store));
            }
        }
    }
    found
}

#[test]
fn the_generic_core_should_name_no_sql() {
    let files: Vec<PathBuf> = all_files()
        .into_iter()
        .filter(|f| top_of(f) == "controller")
        .collect();
    assert!(files.len() > 5, "the controller's files: {files:?}");
    let named = stores_named(&files);
    assert!(named.is_empty(), "the controller names a store: {named:#?}");
}

#[test]
fn a_store_should_be_found_in_a_path_a_use_or_an_error() {
    // The check itself: a file that names sqlx is caught (src/db does).
    let db: Vec<PathBuf> = vec![PathBuf::from("db/queue.rs")];
    assert!(
        stores_named(&db).iter().any(|(_, store)| *store == "sqlx"),
        "{:?}",
        stores_named(&db)
    );
}

#[test]
fn a_cycle_should_be_found_and_an_allowed_edge_only_names_a_real_import() {
    let mut graph = Graph::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&graph), None);
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // An allowed edge that no longer exists must be taken off the list.
    let files = all_files();
    let real = top_level_graph(&files);
    for (from, to) in ALLOWED {
        assert!(
            real.get(*from).is_some_and(|t| t.contains(*to)),
            "{from} -> {to} is allowed but no longer imported: remove it from ALLOWED"
        );
    }
    let groups = groups(&files);
    for (within, from, to) in ALLOWED_IN_GROUPS {
        let group: Vec<String> = within.split('/').map(str::to_owned).collect();
        let members = groups.get(&group).cloned().unwrap_or_default();
        let real = group_graph(&group, &members, &files);
        assert!(
            real.get(*from).is_some_and(|t| t.contains(*to)),
            "{within}: {from} -> {to} is allowed but no longer imported: \
             remove it from ALLOWED_IN_GROUPS"
        );
    }
}

#[test]
fn paths_should_be_read_from_uses_and_inline_paths() {
    let code = "use super::{guard::DeletionGuard, RegistryError};\n\
                let x = crate::registry::tracked_ids(pool);\n\
                use crate::source::{RepoId, Observed};";
    assert_eq!(
        paths_after(code, "super::"),
        ["guard::DeletionGuard", "RegistryError"]
    );
    assert_eq!(
        paths_after(code, "crate::"),
        ["registry::tracked_ids", "source"]
    );
}
