//! The fields the queries for several project files ask inside a commit,
//! answered from the commit's files: `tree { oid }`, `pK: file(path:)`
//! (one path), `tK: file(path:) { object { ... on Tree { entries … } } }`
//! and `tK: tree { entries … }`, nested as deep as the query nests
//! `entries`, with the blob's fields at the last level (as GitHub answers
//! a Blob inside `... on Tree`: `{}`). The tree oid is a digest of the
//! commit's files, so an unchanged tree keeps its oid across commits.

use std::collections::{BTreeMap, BTreeSet};
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

/// A digest of the commit's files (paths and contents): its root tree oid.
pub fn tree_oid(commit: &Commit) -> String {
    folder_oid(commit, "")
}

/// A digest of the files under folder `dir` (relative paths and
/// contents): the same folder content has the same oid in every commit.
pub fn folder_oid(commit: &Commit, dir: &str) -> String {
    use sha2::{Digest, Sha256};
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut digest = Sha256::new();
    for (path, bytes) in &commit.files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        digest.update(rest.as_bytes());
        digest.update([0]);
        digest.update(bytes);
        digest.update([0]);
    }
    let mut hex = hex::encode(digest.finalize());
    hex.truncate(40);
    hex
}

/// `GET /repos/{o}/{n}/git/trees/{sha}[?recursive=1]`: the folder whose
/// oid is `sha` in any commit of `repo`, its entries (all below it when
/// `recursive`), `truncated` past the world's `tree_entry_cap`.
pub fn git_tree(
    world: &World,
    repo: &super::world::Repo,
    sha: &str,
    recursive: bool,
) -> super::rest::Answer {
    use super::rest::Answer;
    let found = repo.commits.values().find_map(|commit| {
        let mut dirs: BTreeSet<String> = BTreeSet::from([String::new()]);
        for path in commit.files.keys() {
            let mut at = 0;
            while let Some(slash) = path[at..].find('/') {
                dirs.insert(path[..at + slash].to_owned());
                at += slash + 1;
            }
        }
        dirs.into_iter()
            .find(|dir| folder_oid(commit, dir) == sha)
            .map(|dir| (commit, dir))
    });
    let Some((commit, dir)) = found else {
        return Answer::not_found();
    };
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut entries: BTreeMap<String, Value> = BTreeMap::new();
    for (path, bytes) in &commit.files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let depth = if recursive { parts.len() } else { 1 };
        for k in 1..=depth.min(parts.len()) {
            let relative = parts[..k].join("/");
            let is_file = k == parts.len();
            let entry = if is_file {
                json!({"path": relative, "mode": if mode(world, commit, path) == 40960 { "120000" } else { "100644" },
                       "type": "blob", "sha": super::rest::blob_sha(bytes), "size": bytes.len()})
            } else {
                let full = format!("{prefix}{relative}");
                json!({"path": relative, "mode": "040000", "type": "tree", "sha": folder_oid(commit, &full)})
            };
            entries.entry(relative).or_insert(entry);
        }
    }
    let cap = world.tree_entry_cap;
    let truncated = entries.len() > cap;
    let tree: Vec<Value> = entries.into_values().take(cap).collect();
    Answer::json(
        200,
        json!({"sha": sha, "url": "", "tree": tree, "truncated": truncated}),
    )
}

/// Whether `query` reads blobs by `object(expression:)`.
pub fn is_blobs(query: &str) -> bool {
    query.contains("object(expression:")
}

/// `rK: repository(owner:, name:) { fJ: object(expression: "<sha>:<path>") … }`.
pub fn blobs(world: &World, installation: i64, query: &str) -> super::rest::Answer {
    static REPO: OnceLock<Regex> = OnceLock::new();
    static BLOB: OnceLock<Regex> = OnceLock::new();
    let repo_re = REPO.get_or_init(|| {
        Regex::new(r#"(\w+): repository\(owner: ("(?:[^"\\]|\\.)*"), name: ("(?:[^"\\]|\\.)*")\)"#)
            .expect("a regex")
    });
    let blob_re = BLOB.get_or_init(|| {
        Regex::new(r#"(\w+): object\(expression: ("(?:[^"\\]|\\.)*")\)"#).expect("a regex")
    });
    let mut data = Map::new();
    for caps in repo_re.captures_iter(query) {
        let alias = caps[1].to_owned();
        let owner: String = serde_json::from_str(&caps[2]).unwrap_or_default();
        let name: String = serde_json::from_str(&caps[3]).unwrap_or_default();
        let at = caps.get(0).map_or(0, |m| m.end());
        let body = block(&query[at..]);
        let Some(repo) = super::rest::visible_by_name(world, installation, &owner, &name) else {
            data.insert(alias, Value::Null);
            continue;
        };
        let mut fields = Map::new();
        for blob in blob_re.captures_iter(body) {
            let expression: String = serde_json::from_str(&blob[2]).unwrap_or_default();
            // `<rev>:<path>`, the revision a sha, a branch or `HEAD`, as
            // Git resolves it.
            let (rev, path) = expression.split_once(':').unwrap_or_default();
            let commit = if rev == "HEAD" {
                repo.head()
            } else {
                repo.resolve(rev)
            };
            let value = commit
                .and_then(|c| c.files.get(path))
                .map_or(Value::Null, |bytes| super::graphql::blob(bytes));
            fields.insert(blob[1].to_owned(), value);
        }
        data.insert(alias, Value::Object(fields));
    }
    super::rest::Answer::json(200, json!({ "data": data }))
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
