//! How a GraphQL query asks for the project files of a repository when
//! `ROSTER_PROJECT_FILES` is more than one fixed path, and what the answer
//! says.
//!
//! Everything is asked inside the head commit (`... on Commit`), so the
//! files and the sha they are reported with belong together: a fixed path
//! is `pK: file(path:)`, as the single-file query asks it; a pattern with
//! `*` lists the tree entries under its fixed folder prefix
//! (`tK: file(path: "services") { object { ... on Tree { entries … } } }`,
//! or the commit's root `tree`), nested once per name that follows, with
//! the blob's text at the last level. Patterns with `**` are not answered
//! here (they need the Git trees API); the commit's root tree oid is asked
//! so a walk can tell whether the tree changed.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::MAX_FILE_BYTES;
use crate::project::patterns::{too_many_files, MAX_FILES_PER_REPO};
use crate::project::ProjectFiles;
use crate::source::{FileContent, FileState, PathFile, BINARY_MESSAGE};

// Why a project file GitHub shows cannot be read, in the words every
// read of GitHub uses (the listing, the batch read, the REST read).

/// Git's mode of a symbolic link.
pub const MODE_SYMLINK: u64 = 0o120_000;

/// What a project file that is a symbolic link reads as, on every source:
/// an edit to its target would never touch its path, so no push could be
/// trusted to show a change of it.
pub const SYMLINK_MESSAGE: &str =
    "the file is a symbolic link; Roster reads only a regular file at this path";

/// The message for a file over the size limit.
pub fn too_large(size: u64) -> String {
    format!("the file is {size} bytes, over the limit of {MAX_FILE_BYTES} bytes (256 KiB)")
}

/// The blob's fields, as every query asks them.
const BLOB_FIELDS: &str = "... on Blob { oid byteSize isBinary isTruncated text }";

/// The fields asked inside the head commit for patterns, and how to read
/// their answer.
#[derive(Debug, Clone)]
pub struct FileQuery {
    files: ProjectFiles,
    asks: Vec<Ask>,
}

/// One part of the query.
#[derive(Debug, Clone)]
enum Ask {
    /// `pK`: one fixed path.
    File { alias: String, path: String },
    /// `tK`: the entries `depth` names deep under the folder `prefix`.
    Tree {
        alias: String,
        prefix: String,
        depth: usize,
    },
}

impl FileQuery {
    /// `None` for one fixed path: that is read with the single-file query.
    pub fn new(files: &ProjectFiles) -> Option<Self> {
        if files.single_path().is_some() {
            return None;
        }
        let asks = files
            .fixed_prefixes()
            .into_iter()
            .enumerate()
            .map(|(k, (prefix, depth))| match depth {
                0 => Ask::File {
                    alias: format!("p{k}"),
                    path: prefix,
                },
                _ => Ask::Tree {
                    alias: format!("t{k}"),
                    prefix,
                    depth,
                },
            })
            .collect();
        Some(FileQuery {
            files: files.clone(),
            asks,
        })
    }

    /// The patterns this query finds files for.
    pub fn files(&self) -> &ProjectFiles {
        &self.files
    }

    /// The selection to put inside `... on Commit { }`.
    pub fn commit_fields(&self) -> String {
        let mut fields = String::from("tree { oid }\n");
        for ask in &self.asks {
            match ask {
                Ask::File { alias, path } => fields.push_str(&format!(
                    "{alias}: file(path: {}) {{ mode object {{ {BLOB_FIELDS} }} }}\n",
                    quoted(path)
                )),
                Ask::Tree {
                    alias,
                    prefix,
                    depth,
                } => {
                    let entries = entries(*depth);
                    if prefix.is_empty() {
                        fields.push_str(&format!("{alias}: tree {{ {entries} }}\n"));
                    } else {
                        fields.push_str(&format!(
                            "{alias}: file(path: {}) {{ object {{ ... on Tree {{ {entries} }} }} }}\n",
                            quoted(prefix)
                        ));
                    }
                }
            }
        }
        fields
    }

    /// The files at one commit of one repository: what a read over REST
    /// asks once it knows the head (`$owner`, `$name`, `$oid`).
    pub fn at_commit(&self) -> String {
        format!(
            "query FilesAtCommit($owner: String!, $name: String!, $oid: GitObjectID!) {{
  repository(owner: $owner, name: $name) {{
    object(oid: $oid) {{
      ... on Commit {{
        {}      }}
    }}
  }}
}}
",
            self.commit_fields()
        )
    }

    /// What the answer inside the commit (`commit`, at `sha`) says: the
    /// matching files sorted by path, `Absent` when none matches.
    pub fn state(&self, sha: String, commit: &serde_json::Map<String, Value>) -> FileState {
        let mut found: BTreeMap<String, FileContent> = BTreeMap::new();
        for ask in &self.asks {
            match ask {
                Ask::File { alias, path } => {
                    let Some(entry) = commit.get(alias).and_then(entry_of) else {
                        continue;
                    };
                    found.insert(path.clone(), content(path, &entry));
                }
                Ask::Tree {
                    alias,
                    prefix,
                    depth,
                } => {
                    let Some(value) = commit.get(alias) else {
                        continue;
                    };
                    // The root tree answers `entries` itself; a folder
                    // answers them inside its `object`.
                    let tree = if prefix.is_empty() {
                        Some(value)
                    } else {
                        value.get("object")
                    };
                    if let Some(tree) = tree {
                        self.collect(tree, prefix, *depth, &mut found);
                    }
                }
            }
        }
        files_state(sha, found)
    }

    /// Walks `tree`'s entries `depth` levels down under the folder `dir`,
    /// keeping the last level's entries whose path matches.
    fn collect(
        &self,
        tree: &Value,
        dir: &str,
        depth: usize,
        found: &mut BTreeMap<String, FileContent>,
    ) {
        let Some(entries) = tree.get("entries").and_then(Value::as_array) else {
            return;
        };
        for value in entries {
            let Some(entry) = entry_of(value) else {
                continue;
            };
            let path = if dir.is_empty() {
                entry.name.clone()
            } else {
                format!("{dir}/{}", entry.name)
            };
            if depth > 1 {
                if entry.kind == "tree" && self.files.may_hold(&path) {
                    if let Some(object) = value.get("object") {
                        self.collect(object, &path, depth - 1, found);
                    }
                }
            } else if self.files.matches(&path) && found.len() <= MAX_FILES_PER_REPO {
                let content = content(&path, &entry);
                found.insert(path, content);
            }
        }
    }
}

/// `query` (the listing or the batch read, written for one path) asking
/// `fields` inside the commit instead of `file(path: $path) { … }`, and
/// without the `$path` variable.
pub fn with_fields(query: &str, fields: &str) -> String {
    let Some(start) = query.find("file(path: $path)") else {
        return query.to_owned();
    };
    let mut depth = 0usize;
    let mut end = query.len();
    for (at, c) in query[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    end = start + at + 1;
                    break;
                }
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(query.len() + fields.len());
    out.push_str(&query[..start]);
    out.push_str(fields);
    out.push_str(&query[end..]);
    out.replace(", $path: String!", "")
}

/// One tree entry as asked: its name, kind, mode and blob fields.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    #[serde(default)]
    name: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    mode: Option<u64>,
    #[serde(default)]
    object: Option<BlobFields>,
}

/// A blob's fields, as every query asks them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlobFields {
    /// Git's blob id: what a file GitHub calls binary is read again by.
    #[serde(default)]
    oid: Option<String>,
    byte_size: Option<u64>,
    is_binary: Option<bool>,
    is_truncated: Option<bool>,
    text: Option<String>,
}

/// What a `file(path:)` answer (`mode object { … }`) holds at `path`;
/// `None` when nothing is there.
pub(super) fn file_answer(path: &str, value: &Value) -> Option<FileContent> {
    entry_of(value).map(|entry| content(path, &entry))
}

fn entry_of(value: &Value) -> Option<Entry> {
    if value.is_null() {
        return None;
    }
    Entry::deserialize(value).ok()
}

/// The files found at commit `sha`, by path: sorted, `Absent` when none,
/// unreadable as a whole past the bound of files.
pub(super) fn files_state(sha: String, found: BTreeMap<String, FileContent>) -> FileState {
    if found.len() > MAX_FILES_PER_REPO {
        return FileState::Unreadable {
            sha: Some(sha),
            message: format!("file: {}", too_many_files()),
        };
    }
    if found.is_empty() {
        return FileState::Absent { sha: Some(sha) };
    }
    let files = found
        .into_iter()
        .map(|(path, content)| PathFile { path, content })
        .collect();
    FileState::Files { sha, files }
}

/// What one matching entry holds; a problem line names its path.
fn content(path: &str, entry: &Entry) -> FileContent {
    let problem = |message: &str| FileContent::Unreadable(format!("{path}: file: {message}"));
    if entry.mode == Some(MODE_SYMLINK) {
        return problem(SYMLINK_MESSAGE);
    }
    if entry.kind == "tree" || entry.mode == Some(0o040_000) {
        return problem("the path is a folder, not a file");
    }
    match entry.object.as_ref().filter(|b| b.byte_size.is_some()) {
        Some(blob) => file_content(path, blob),
        None => problem("the path is not a file"),
    }
}

/// What a blob at `path` holds: its text, or why it cannot be used.
pub(super) fn file_content(path: &str, blob: &BlobFields) -> FileContent {
    let problem = |message: &str| FileContent::Unreadable(format!("{path}: file: {message}"));
    let size = blob.byte_size.unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return problem(&too_large(size));
    }
    if blob.is_binary == Some(true) {
        // A NUL is enough for GitHub to say so; the bytes tell where.
        return match &blob.oid {
            Some(oid) => FileContent::Binary {
                blob: oid.clone(),
                judged: None,
            },
            None => problem(BINARY_MESSAGE),
        };
    }
    match (&blob.text, blob.is_truncated) {
        (Some(text), Some(false) | None) => FileContent::Bytes(text.clone().into_bytes()),
        _ => problem("GitHub did not return the file's text"),
    }
}

/// `entries { … }` nested `depth` levels, the blob's text at the last.
fn entries(depth: usize) -> String {
    if depth <= 1 {
        return format!("entries {{ name type mode object {{ {BLOB_FIELDS} }} }}");
    }
    format!(
        "entries {{ name type mode object {{ ... on Tree {{ {} }} }} }}",
        entries(depth - 1)
    )
}

/// A GraphQL string literal (JSON's escapes are GraphQL's).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(patterns: &str) -> FileQuery {
        FileQuery::new(&ProjectFiles::parse(patterns).expect("patterns")).expect("patterns")
    }

    fn blob(text: &str) -> Value {
        json!({"byteSize": text.len(), "isBinary": false, "isTruncated": false, "text": text})
    }

    fn commit(value: Value) -> serde_json::Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn one_fixed_path_should_keep_the_single_file_query() {
        assert!(FileQuery::new(&ProjectFiles::default()).is_none());
        let fields = query("project.yaml,services/*/project.yaml").commit_fields();
        assert!(
            fields.contains("p0: file(path: \"project.yaml\")"),
            "{fields}"
        );
        assert!(fields.contains("t1: file(path: \"services\")"), "{fields}");
        assert_eq!(fields.matches("entries").count(), 2, "{fields}");
    }

    #[test]
    fn a_query_for_one_path_should_take_the_fields_instead() {
        let fields = query("services/*/project.yaml").commit_fields();
        let listing = with_fields("query Q($owner: String!, $path: String!) {\n  x {\n    file(path: $path) { mode object { id } }\n    isArchived\n  }\n}", &fields);
        assert!(!listing.contains("$path"), "{listing}");
        assert!(
            listing.contains("t0: file(path: \"services\")"),
            "{listing}"
        );
        assert!(listing.contains("isArchived"), "{listing}");
        assert_eq!(listing.matches('{').count(), listing.matches('}').count());
    }

    #[test]
    fn the_answer_should_give_the_matching_files_sorted() {
        let q = query("project.yaml,services/*/project.yaml");
        let service = |name: &str, files: Value| json!({"name": name, "type": "tree", "mode": 16384, "object": {"entries": files}});
        let answer = commit(json!({
            "tree": {"oid": "t"},
            "p0": {"mode": 33188, "object": blob("name: root\n")},
            "t1": {"object": {"entries": [
                service("b", json!([{"name": "project.yaml", "type": "blob", "mode": 33188, "object": blob("name: b\n")}])),
                service("a", json!([
                    {"name": "main.go", "type": "blob", "mode": 33188, "object": blob("package a")},
                    {"name": "project.yaml", "type": "blob", "mode": 40960, "object": blob("x")},
                ])),
                service("c", json!([{"name": "project.yaml", "type": "tree", "mode": 16384, "object": {}}])),
                {"name": "README.md", "type": "blob", "mode": 33188, "object": {}},
            ]}},
        }));
        let FileState::Files { sha, files } = q.state("abc".into(), &answer) else {
            panic!("no files");
        };
        assert_eq!(sha, "abc");
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "project.yaml",
                "services/a/project.yaml",
                "services/b/project.yaml",
                "services/c/project.yaml"
            ]
        );
        assert_eq!(
            files[0].content,
            FileContent::Bytes(b"name: root\n".to_vec())
        );
        assert!(
            matches!(&files[1].content, FileContent::Unreadable(m) if m.starts_with("services/a/project.yaml: file: ") && m.contains("symbolic link"))
        );
        assert!(matches!(&files[3].content, FileContent::Unreadable(m) if m.contains("folder")));
    }

    #[test]
    fn no_match_should_be_absent_and_too_many_unreadable() {
        let q = query("*/project.yaml");
        let none = commit(json!({"t0": {"entries": []}}));
        assert_eq!(
            q.state("abc".into(), &none),
            FileState::Absent {
                sha: Some("abc".into())
            }
        );
        let many: Vec<Value> = (0..=MAX_FILES_PER_REPO)
            .map(|n| json!({"name": format!("s{n}"), "type": "tree", "mode": 16384, "object": {"entries": [
                {"name": "project.yaml", "type": "blob", "mode": 33188, "object": blob("x")}
            ]}}))
            .collect();
        let answer = commit(json!({"t0": {"entries": many}}));
        assert!(matches!(
            q.state("abc".into(), &answer),
            FileState::Unreadable { ref message, .. } if message == "file: more than 500 project files"
        ));
    }
}
