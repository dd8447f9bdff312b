//! The fields the queries for several project files ask inside a commit,
//! answered from the commit's files: `tree { oid }`, `pK: file(path:)`
//! (one path), `tK: file(path:) { object { ... on Tree { entries … } } }`
//! and `tK: tree { entries … }`, nested as deep as the query nests
//! `entries`, with the blob's fields at the last level (as GitHub answers
//! a Blob inside `... on Tree`: `{}`). The tree oid is a digest of the
//! commit's files, so an unchanged tree keeps its oid across commits.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{json, Map, Value};

use super::world::{Commit, World};

/// Whether `query` asks the fields of several project files.
pub fn asks_files(query: &str) -> bool {
    query.contains("tree { oid }")
}

/// The answer inside the commit, and how many tree entries it holds.
pub fn commit_fields(world: &World, commit: &Commit, query: &str) -> (Map<String, Value>, usize) {
    let mut fields = Map::new();
    let mut count = 0;
    fields.insert("tree".into(), json!({"oid": tree_oid(commit)}));
    static FILE: OnceLock<Regex> = OnceLock::new();
    static TREE: OnceLock<Regex> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        Regex::new(r#"(\w+): file\(path: ("(?:[^"\\]|\\.)*")\)"#).expect("a regex")
    });
    let tree = TREE.get_or_init(|| Regex::new(r"(\w+): tree \{").expect("a regex"));
    for caps in file.captures_iter(query) {
        let (alias, at) = (caps[1].to_owned(), caps.get(0).map_or(0, |m| m.end()));
        let path: String = serde_json::from_str(&caps[2]).unwrap_or_default();
        let depth = block(&query[at..]).matches("entries").count();
        let value = if depth == 0 {
            one_file(world, commit, &path)
        } else if is_dir(commit, &path) {
            json!({"object": entries(world, commit, &path, depth, &mut count)})
        } else if commit.files.contains_key(&path) {
            json!({"mode": 33188, "object": {}})
        } else {
            Value::Null
        };
        fields.insert(alias, value);
    }
    for caps in tree.captures_iter(query) {
        let (alias, at) = (caps[1].to_owned(), caps.get(0).map_or(0, |m| m.end() - 1));
        let depth = block(&query[at..]).matches("entries").count();
        fields.insert(alias, entries(world, commit, "", depth, &mut count));
    }
    (fields, count)
}

/// The text from the first `{` of `text` to its matching `}`.
fn block(text: &str) -> &str {
    let Some(start) = text.find('{') else {
        return "";
    };
    let mut depth = 0;
    for (at, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[start..start + at + 1];
                }
            }
            _ => {}
        }
    }
    &text[start..]
}

/// A digest of the commit's files (paths and contents).
pub fn tree_oid(commit: &Commit) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for (path, bytes) in &commit.files {
        digest.update(path.as_bytes());
        digest.update([0]);
        digest.update(bytes);
        digest.update([0]);
    }
    let mut hex = hex::encode(digest.finalize());
    hex.truncate(40);
    hex
}

fn is_dir(commit: &Commit, dir: &str) -> bool {
    dir.is_empty()
        || commit
            .files
            .keys()
            .any(|p| p.starts_with(&format!("{dir}/")))
}

/// The entry of one path, as `file(path:)` answers it.
fn one_file(world: &World, commit: &Commit, path: &str) -> Value {
    match commit.files.get(path) {
        Some(bytes) => {
            json!({"mode": mode(world, commit, path), "object": super::graphql::blob(bytes)})
        }
        None if is_dir(commit, path) => json!({"mode": 16384, "object": {}}),
        None => Value::Null,
    }
}

fn mode(world: &World, commit: &Commit, path: &str) -> u32 {
    if world
        .symlinks
        .contains(&(commit.sha.clone(), path.to_owned()))
    {
        40960
    } else {
        33188
    }
}

/// `{ entries: [...] }` of the folder `dir`, `depth` levels deep.
fn entries(world: &World, commit: &Commit, dir: &str, depth: usize, count: &mut usize) -> Value {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let names: BTreeSet<&str> = commit
        .files
        .keys()
        .filter_map(|p| p.strip_prefix(&prefix))
        .map(|rest| rest.split('/').next().unwrap_or(rest))
        .collect();
    let mut list = Vec::new();
    for name in names {
        *count += 1;
        let path = format!("{prefix}{name}");
        let entry = match commit.files.get(&path) {
            Some(bytes) => json!({
                "name": name, "type": "blob", "mode": mode(world, commit, &path),
                "object": if depth <= 1 { super::graphql::blob(bytes) } else { json!({}) },
            }),
            None => json!({
                "name": name, "type": "tree", "mode": 16384,
                "object": if depth > 1 { entries(world, commit, &path, depth - 1, count) } else { json!({}) },
            }),
        };
        list.push(entry);
    }
    json!({ "entries": list })
}
