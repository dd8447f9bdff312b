//! The REST routes, answered from the world's state in GitHub's shapes.

use std::time::SystemTime;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::world::{Repo, Token, World};

/// An answer before the generic layer adds rate-limit headers and ETags.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
}

impl Answer {
    pub fn json(status: u16, value: Value) -> Self {
        Self {
            status,
            content_type: "application/json; charset=utf-8",
            body: value.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    pub fn message(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({ "message": message, "documentation_url": "https://docs.github.com/rest" }),
        )
    }

    /// GitHub's 404, as in `tests/fixtures/github/rest/error-404-not-found.json`.
    pub fn not_found() -> Self {
        Self::json(
            404,
            json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/reference/repos#get-a-repository"}),
        )
    }
}

/// `GET /app/installations?per_page=&page=`, with a `Link` to the next page.
pub fn installations(world: &World, base: &str, query: &str) -> Answer {
    let param = |name: &str| {
        query.split('&').find_map(|kv| {
            kv.strip_prefix(name)?
                .strip_prefix('=')?
                .parse::<usize>()
                .ok()
        })
    };
    let per_page = param("per_page").unwrap_or(30).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let live: Vec<_> = world
        .installations
        .values()
        .filter(|i| !i.deleted)
        .collect();
    let items: Vec<Value> = live
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|i| {
            json!({
                "id": i.id,
                "account": {"login": i.login, "id": i.id * 10, "type": if i.personal { "User" } else { "Organization" }},
                "access_tokens_url": format!("{base}/app/installations/{}/access_tokens", i.id),
                "repositories_url": format!("{base}/installation/repositories"),
                "app_id": world.app_id,
                "target_id": i.id * 10,
                "target_type": "Organization",
                "app_slug": "roster",
                "permissions": i.permissions,
                "events": i.events,
                "repository_selection": "selected",
                "suspended_at": if i.suspended { json!("2024-01-01T00:00:00Z") } else { Value::Null },
                "suspended_by": Value::Null,
            })
        })
        .collect();
    let mut answer = Answer::json(200, Value::Array(items));
    if page * per_page < live.len() {
        let next = format!(
            "{base}/app/installations?per_page={per_page}&page={}",
            page + 1
        );
        answer
            .headers
            .push(("link".into(), format!("<{next}>; rel=\"next\"")));
    }
    answer
}

/// `POST /app/installations/{id}/access_tokens`.
pub fn access_token(world: &mut World, installation: i64) -> Answer {
    match world.installations.get(&installation) {
        None => return Answer::not_found(),
        Some(i) if i.deleted => return Answer::not_found(),
        Some(i) if i.suspended => {
            return Answer::message(403, "This installation has been suspended")
        }
        Some(_) => {}
    }
    let token = format!("ghs_{:036x}", fastrand::u128(..));
    let expires_at = SystemTime::now() + world.token_lifetime;
    world.tokens.insert(
        token.clone(),
        Token {
            installation,
            expires_at,
        },
    );
    let expires: chrono::DateTime<chrono::Utc> = expires_at.into();
    Answer::json(
        201,
        json!({
            "token": token,
            "expires_at": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "permissions": {"contents": "read", "metadata": "read"},
            "repository_selection": "selected",
        }),
    )
}

pub fn repo_json(base: &str, repo: &Repo) -> Value {
    let full_name = format!("{}/{}", repo.owner, repo.name);
    json!({
        "id": repo.id,
        "node_id": format!("R_{}", repo.id),
        "name": repo.name,
        "full_name": full_name,
        "private": repo.private,
        "owner": {"login": repo.owner, "id": repo.installation * 10, "type": "Organization"},
        "html_url": format!("https://github.com/{full_name}"),
        "url": format!("{base}/repos/{full_name}"),
        "fork": false,
        "archived": repo.archived,
        "disabled": false,
        "default_branch": repo.default_branch,
        "visibility": if repo.private { "private" } else { "public" },
    })
}

/// The repository `installation` sees by id, if any.
pub fn visible_by_id(world: &World, installation: i64, id: i64) -> Option<&Repo> {
    world
        .repos
        .get(&id)
        .filter(|r| r.installation == installation)
}

pub fn visible_by_name<'w>(
    world: &'w World,
    installation: i64,
    owner: &str,
    name: &str,
) -> Option<&'w Repo> {
    world.repos.values().find(|r| {
        r.installation == installation
            && r.owner.eq_ignore_ascii_case(owner)
            && r.name.eq_ignore_ascii_case(name)
    })
}

/// `GET /repos/{o}/{n}/commits/{ref}`; the sha alone with the sha media type.
pub fn commit(repo: &Repo, reference: &str, sha_only: bool) -> Answer {
    if repo.branches.is_empty() {
        return Answer::message(409, "Git Repository is empty.");
    }
    let Some(commit) = repo.resolve(reference) else {
        return Answer::message(422, &format!("No commit found for SHA: {reference}"));
    };
    if sha_only {
        return Answer {
            status: 200,
            content_type: "application/vnd.github.sha; charset=utf-8",
            body: commit.sha.clone().into_bytes(),
            headers: Vec::new(),
        };
    }
    Answer::json(
        200,
        json!({"sha": commit.sha, "commit": {"message": "change"}}),
    )
}

/// `GET /repos/{o}/{n}/contents/{path}?ref=`.
pub fn contents(base: &str, repo: &Repo, path: &str, reference: Option<&str>) -> Answer {
    let commit = match reference {
        Some(reference) => repo.resolve(reference),
        None => repo.head(),
    };
    let Some(commit) = commit else {
        return Answer::message(
            404,
            &format!("No commit found for the ref {}", reference.unwrap_or("")),
        );
    };
    let full_name = format!("{}/{}", repo.owner, repo.name);
    if let Some(bytes) = commit.files.get(path) {
        let large = bytes.len() > 1024 * 1024;
        let content = if large {
            String::new()
        } else {
            wrap_base64(bytes)
        };
        let sha = blob_sha(bytes);
        let name = path.rsplit('/').next().unwrap_or(path);
        return Answer::json(
            200,
            json!({
                "type": "file",
                "encoding": if large { "none" } else { "base64" },
                "size": bytes.len(),
                "name": name,
                "path": path,
                "content": content,
                "sha": sha,
                "url": format!("{base}/repos/{full_name}/contents/{path}"),
                "git_url": format!("{base}/repos/{full_name}/git/blobs/{sha}"),
                "html_url": format!("https://github.com/{full_name}/blob/{}/{path}", commit.sha),
                "download_url": format!("https://raw.githubusercontent.com/{full_name}/{}/{path}", commit.sha),
            }),
        );
    }
    let prefix = format!("{}/", path.trim_end_matches('/'));
    let entries: Vec<Value> = commit
        .files
        .keys()
        .filter(|p| p.starts_with(&prefix))
        .map(|p| json!({"type": "file", "name": p.rsplit('/').next(), "path": p}))
        .collect();
    if entries.is_empty() {
        Answer::not_found()
    } else {
        Answer::json(200, Value::Array(entries))
    }
}

/// Base64 wrapped every 60 characters, each line ending in a newline, as
/// GitHub sends file contents.
pub fn wrap_base64(bytes: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut wrapped = String::with_capacity(encoded.len() + encoded.len() / 60 + 1);
    for line in encoded.as_bytes().chunks(60) {
        wrapped.push_str(&String::from_utf8_lossy(line));
        wrapped.push('\n');
    }
    wrapped
}

pub fn blob_sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))[..40].to_owned()
}

pub fn etag(body: &[u8]) -> String {
    format!("\"{}\"", &hex::encode(Sha256::digest(body))[..32])
}
