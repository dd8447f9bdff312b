//! Pull requests' changed files as GitHub lists them:
//! `GET /repos/{o}/{r}/pulls/{n}/files` (and the `/repositories/{id}/…`
//! form GitHub's own `Link` headers point to), `per_page` (default 30, at
//! most 100) and `page`, a `Link` header with `rel="next"` and
//! `rel="last"` while pages remain, at most 3,000 files. A file removed and
//! one added with the same bytes are one `renamed` file with its
//! `previous_filename`, as GitHub detects renames.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::rest::{blob_sha, Answer};
use super::world::{Repo, World};

/// Files GitHub lists for one pull request at most.
pub const MAX_FILES: usize = 3000;

/// Whether `segments` ask a pull request's files; its number.
pub fn number(segments: &[String]) -> Option<i64> {
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["repos", _, _, "pulls", n, "files"] | ["repositories", _, "pulls", n, "files"] => {
            n.parse().ok()
        }
        _ => None,
    }
}

/// The page `query` asks of pull request `number`'s files.
pub fn answer(world: &World, base: &str, repo: &Repo, number: i64, query: &str) -> Answer {
    let Some(head) = world.pulls.get(&(repo.id, number)) else {
        return Answer::not_found();
    };
    let Some(head) = repo.commits.get(head) else {
        return Answer::not_found();
    };
    let base_files = world
        .parents
        .get(&head.sha)
        .and_then(|parent| repo.commits.get(parent))
        .or_else(|| repo.head())
        .map(|c| c.files.clone())
        .unwrap_or_default();
    let files = diff(&base_files, &head.files);
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let per_page = param("per_page").unwrap_or(30).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let listed = files.len().min(MAX_FILES);
    let last = listed.div_ceil(per_page).max(1);
    let items: Vec<Value> = files
        .into_iter()
        .take(listed)
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let mut answer = Answer::json(200, Value::Array(items));
    if page < last {
        let link = |p: usize| {
            format!(
                "<{base}/repositories/{}/pulls/{number}/files?per_page={per_page}&page={p}>",
                repo.id
            )
        };
        answer.headers.push((
            "link".into(),
            format!(
                "{}; rel=\"next\", {}; rel=\"last\"",
                link(page + 1),
                link(last)
            ),
        ));
    }
    answer
}

/// The changed files between two trees, in path order, GitHub's shape.
fn diff(old: &BTreeMap<String, Vec<u8>>, new: &BTreeMap<String, Vec<u8>>) -> Vec<Value> {
    let added: Vec<&String> = new.keys().filter(|p| !old.contains_key(*p)).collect();
    let mut removed: Vec<&String> = old.keys().filter(|p| !new.contains_key(*p)).collect();
    let mut out: Vec<(String, Value)> = Vec::new();
    for path in new.keys() {
        let bytes = &new[path];
        let entry = if added.contains(&path) {
            match removed.iter().position(|r| old.get(*r) == Some(bytes)) {
                Some(k) => {
                    let previous = removed.remove(k);
                    let mut e = file(path, bytes, "renamed");
                    e["previous_filename"] = json!(previous);
                    e
                }
                None => file(path, bytes, "added"),
            }
        } else if old.get(path) != Some(bytes) {
            file(path, bytes, "modified")
        } else {
            continue;
        };
        out.push((path.clone(), entry));
    }
    for path in removed {
        out.push((path.clone(), file(path, &old[path], "removed")));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, v)| v).collect()
}

fn file(path: &str, bytes: &[u8], status: &str) -> Value {
    let lines = bytes.iter().filter(|b| **b == b'\n').count();
    let (additions, deletions) = match status {
        "removed" => (0, lines),
        "renamed" => (0, 0),
        _ => (lines, 0),
    };
    json!({
        "sha": blob_sha(bytes),
        "filename": path,
        "status": status,
        "additions": additions,
        "deletions": deletions,
        "changes": additions + deletions,
        "blob_url": format!("https://github.com/blob/{path}"),
        "raw_url": format!("https://github.com/raw/{path}"),
        "contents_url": format!("https://api.github.com/contents/{path}"),
    })
}
