//! The GitHub calls of the `Roster` check run: the project file at one
//! commit (one GraphQL query, a fork's head included, since GitHub keeps a
//! pull request's commits in the base repository too), the project files
//! a pull request touches (all in one query, [`files_at_head`]), and creating,
//! updating and finding the run over REST. Every call goes through the
//! same road as the rest of Roster ([`super::http::Http::send`]): the
//! installation's rate limits, `Retry-After` and the request metrics apply.

use std::sync::Arc;

use axum::http::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use super::client::Client;
use super::contents::contents_at;
use super::graphql::{project_file, too_large, GraphqlError};
use super::http::{join, CallError, Reply, Request};
use super::rate_limit::{Bucket, Resource, Who};
use super::MAX_FILE_BYTES;
use crate::project::verdict::HeadFile;
use crate::source::{FileState, InstallationId};

mod files_at_head;
mod pull_files;

pub use files_at_head::files_at_head_query;
pub use pull_files::{ChangedPaths, MAX_PAGES, PER_PAGE};

/// The check run's name on GitHub.
pub const CHECK_NAME: &str = "Roster";

/// Annotations GitHub takes per request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;

/// The project file at one commit, by the commit's sha.
pub const FILE_AT_COMMIT: &str = concat!(
    "query FileAtCommit($owner: String!, $name: String!, $oid: GitObjectID!, $path: String!) {
  repository(owner: $owner, name: $name) {
    object(oid: $oid) {
      ... on Commit {
",
    project_file!(),
    "      }
    }
  }
}
"
);

/// Git's mode of a symbolic link (`0o120000`).
const MODE_SYMLINK: u64 = 0o120_000;
/// Git's mode of a regular file, executable or not.
const MODE_FILES: [u64; 2] = [0o100_644, 0o100_755];

/// Why a post did not go through.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PostError {
    /// 403: the App may not write checks on this installation.
    #[error(
        "GitHub refused to let the App write checks (403): {0}; grant the App `checks: write`"
    )]
    Denied(String),
    #[error(transparent)]
    Call(#[from] CallError),
}

/// The checks API of one App, for every installation.
#[derive(Debug, Clone)]
pub struct ChecksApi {
    client: Arc<Client>,
}

impl ChecksApi {
    pub(crate) fn new(client: Arc<Client>) -> Self {
        Self { client }
    }

    /// Counts one request of the installation's `resource` if what is
    /// left stays above `floor(limit)`; otherwise when the window resets
    /// ([`super::rate_limit::RateLimits::take_above`]).
    pub fn take_above(
        &self,
        installation: InstallationId,
        resource: Resource,
        floor: impl Fn(u64) -> u64,
    ) -> Result<(), std::time::SystemTime> {
        let bucket = Bucket {
            who: Who::Installation(installation),
            resource,
        };
        self.client
            .http
            .limits()
            .take_above(bucket, std::time::SystemTime::now(), floor)
    }

    /// Path of the project file inside a repository.
    pub fn project_file(&self) -> &str {
        &self.client.project_file
    }

    /// The project file at commit `sha` of `owner/name`.
    pub async fn file_at(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        sha: &str,
    ) -> Result<HeadFile, CallError> {
        let path = self.client.project_file.clone();
        self.file_at_path(installation, owner, name, sha, &path)
            .await
    }

    /// The file at `path` of commit `sha` of `owner/name`: one of several
    /// project files.
    pub async fn file_at_path(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        sha: &str,
        path: &str,
    ) -> Result<HeadFile, CallError> {
        #[derive(Deserialize)]
        struct Data {
            repository: Option<Repository>,
        }
        #[derive(Deserialize)]
        struct Repository {
            object: Option<Commit>,
        }
        #[derive(Deserialize)]
        struct Commit {
            file: Option<Entry>,
        }
        let variables = json!({
            "owner": owner, "name": name, "oid": sha, "path": path,
        });
        let (data, errors): (Data, _) = self
            .client
            .graphql_partial(installation, FILE_AT_COMMIT, variables)
            .await?;
        let Some(repository) = data.repository else {
            return Err(no_repository(&errors));
        };
        // GitHub answers an unknown commit with `object: null` (and an error).
        let Some(commit) = repository.object else {
            return Ok(HeadFile::CommitGone);
        };
        Ok(head_file(commit.file))
    }

    /// The bytes of the file at `path` of commit `sha` of `owner/name`,
    /// read over REST, when they are UTF-8 text (NULs included); `None`
    /// when they are not, or cannot be read (the check then says what
    /// GitHub's GraphQL said).
    pub async fn text_at(
        &self,
        installation: InstallationId,
        (owner, name): (&str, &str),
        sha: &str,
        path: &str,
    ) -> Option<Vec<u8>> {
        let read = contents_at(&self.client, installation, (owner, name), path, sha.into()).await;
        match read {
            Ok(FileState::Found { bytes, .. }) if std::str::from_utf8(&bytes).is_ok() => {
                Some(bytes)
            }
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(%error, "could not read a file GitHub calls binary for its check");
                None
            }
        }
    }

    /// The id of the `Roster` run on `sha`, if one exists.
    pub async fn find_run(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        sha: &str,
    ) -> Result<Option<i64>, PostError> {
        let mut url = self.url(["repos", owner, name, "commits", sha, "check-runs"])?;
        url.query_pairs_mut()
            .append_pair("check_name", CHECK_NAME)
            .append_pair("filter", "latest");
        let reply = self
            .client
            .get(installation, &url, "application/vnd.github+json", false)
            .await?;
        let reply = judge(reply, "GET check-runs of a commit")?;
        #[derive(Deserialize)]
        struct Runs {
            check_runs: Vec<Run>,
        }
        #[derive(Deserialize)]
        struct Run {
            id: i64,
        }
        let runs: Runs = serde_json::from_str(&reply.body)
            .map_err(|e| CallError::unexpected("GET check-runs of a commit", e))?;
        Ok(runs.check_runs.first().map(|r| r.id))
    }

    /// Creates the run on `sha`, completed, with `body`'s output; its id.
    pub async fn create_run(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        sha: &str,
        mut body: Value,
    ) -> Result<i64, PostError> {
        body["name"] = json!(CHECK_NAME);
        body["head_sha"] = json!(sha);
        let url = self.url(["repos", owner, name, "check-runs"])?;
        let reply = self.send(installation, Method::POST, url, body).await?;
        let reply = judge(reply, "POST check-runs")?;
        #[derive(Deserialize)]
        struct Created {
            id: i64,
        }
        let created: Created = serde_json::from_str(&reply.body)
            .map_err(|e| CallError::unexpected("POST check-runs", e))?;
        Ok(created.id)
    }

    /// Updates run `run_id` with `body` (annotations are added to the
    /// ones it has).
    pub async fn update_run(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        run_id: i64,
        body: Value,
    ) -> Result<(), PostError> {
        let id = run_id.to_string();
        let url = self.url(["repos", owner, name, "check-runs", &id])?;
        let reply = self.send(installation, Method::PATCH, url, body).await?;
        judge(reply, "PATCH check-runs/{id}")?;
        Ok(())
    }

    fn url<'a>(&self, segments: impl IntoIterator<Item = &'a str>) -> Result<url::Url, CallError> {
        join(&self.client.api_url, segments)
    }

    /// Sends a write as the installation; a revoked token is renewed once.
    async fn send(
        &self,
        installation: InstallationId,
        method: Method,
        url: url::Url,
        body: Value,
    ) -> Result<Reply, CallError> {
        let bucket = Bucket {
            who: Who::Installation(installation),
            resource: Resource::Core,
        };
        let body = body.to_string();
        let mut fresh_token = false;
        loop {
            let token = self
                .client
                .auth
                .token(&self.client.http, installation)
                .await?;
            let request = Request {
                method: method.clone(),
                body: Some(body.clone()),
                ..Request::get(url.clone(), token, bucket)
            };
            let reply = self.client.http.send(request).await?;
            if reply.status == 401 && !fresh_token {
                self.client.auth.forget(installation);
                fresh_token = true;
                continue;
            }
            return Ok(reply);
        }
    }
}

/// What the check says of a file GitHub calls binary, within the size
/// bound, when its bytes cannot say better ([`ChecksApi::text_at`]).
const BINARY: &str = "is binary or not UTF-8 text (GitHub shows no text for it)";

/// Whether `head` is a regular file within the size bound that GitHub
/// calls binary: a single NUL is enough for that, and a NUL has a line and
/// column, which its bytes ([`ChecksApi::text_at`]) tell.
pub fn said_binary(head: &HeadFile) -> bool {
    matches!(head, HeadFile::Unreadable(message) if message == BINARY)
}

/// A `file(path:)` answer: the entry's mode and blob.
#[derive(Deserialize)]
struct Entry {
    mode: Option<u64>,
    object: Option<Blob>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    byte_size: Option<u64>,
    is_binary: Option<bool>,
    is_truncated: Option<bool>,
    text: Option<String>,
}

/// The error of an answer without its repository.
fn no_repository(errors: &[GraphqlError]) -> CallError {
    let message = errors
        .first()
        .map_or("no repository", |e| e.message.as_str());
    CallError::unexpected("the file at a commit", message)
}

/// What one `file(path:)` answer inside a known commit says of the file:
/// absent (`null`), a regular file's text, or why it cannot be read.
fn head_file(entry: Option<Entry>) -> HeadFile {
    let Some(entry) = entry else {
        return HeadFile::Absent;
    };
    let mode = entry.mode.unwrap_or(0o100_644);
    if mode == MODE_SYMLINK {
        return HeadFile::Unreadable(
            "is a symbolic link; Roster reads only a regular file at this path".into(),
        );
    }
    if !MODE_FILES.contains(&mode) {
        return HeadFile::Unreadable("is not a regular file (a folder or a submodule)".into());
    }
    let Some(blob) = entry.object else {
        return HeadFile::Unreadable("GitHub did not return the file".into());
    };
    let size = blob.byte_size.unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return HeadFile::Unreadable(too_large(size));
    }
    if blob.is_binary == Some(true) {
        return HeadFile::Unreadable(BINARY.into());
    }
    match (blob.text, blob.is_truncated) {
        (Some(text), Some(false) | None) => HeadFile::Found(text.into_bytes()),
        _ => HeadFile::Unreadable("GitHub did not return the file's text".into()),
    }
}

/// A 2xx passes; 403 is a refusal of the permission (rate limits never
/// get here: the road turns them into errors); anything else an error.
fn judge(reply: Reply, what: &str) -> Result<Reply, PostError> {
    match reply.status {
        200..=299 => Ok(reply),
        403 if reply.message().to_ascii_lowercase().contains("suspended") => {
            Err(PostError::Call(CallError::Status {
                what: what.to_owned(),
                status: 403,
                message: reply.message(),
            }))
        }
        403 => Err(PostError::Denied(reply.message())),
        status => Err(PostError::Call(CallError::Status {
            what: what.to_owned(),
            status,
            message: reply.message(),
        })),
    }
}
