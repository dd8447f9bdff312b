//! Turns a repository id into what GitHub shows now.
//!
//! With the listing's hint, the hint is the answer (no request). A worker's
//! batch is read together, one GraphQL query per 100 repositories
//! ([`super::batch_read`]); what that query cannot decide, and a single
//! [`Storage::get`], is read over REST by id. The REST read:
//! the repository by id (`GET /repositories/{id}`, which survives renames and
//! transfers), the head of its default branch, and the project file at that
//! commit. The head is asked for under the name and branch the registry
//! recorded at the same time as the read by id, so a webhook costs two round
//! trips instead of three; when the read by id shows another name or branch
//! (a rename), that guess is dropped and the head asked for again.
//!
//! Only definite answers remove a repository: a 404 by id, the archived
//! flag, or the installation being gone. Everything uncertain
//! (5xx, timeouts, rate limits, answers that do not parse, a suspended
//! installation) is a [`Failure`] that the controller retries.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::auth::Installation;
use super::client::Client;
use super::contents::contents_at;
use super::files_at_commit;
use super::http::{join, CallError, Reply};
use super::read_pace;
use crate::controller::{Failure, ReadPace, Storage};
use crate::registry::RepoRecord;
use crate::source::{FileState, InstallationId, Observed, RepoId, RepoInfo};

/// Why a repository is removed when no installation sees it any more.
pub const NOT_VISIBLE: &str = "no longer visible to the App";

/// A suspended installation is not retried sooner than this: unsuspending
/// it triggers a listing, which enqueues its repositories at once.
pub(super) const SUSPENDED_RETRY: Duration = Duration::from_secs(600);

const JSON: &str = "application/vnd.github+json";
const SHA: &str = "application/vnd.github.sha";

/// Reads repositories from GitHub (or from the listing's hint).
#[derive(Debug, Clone)]
pub struct GithubStorage {
    pub(super) client: Arc<Client>,
}

#[derive(Debug, Deserialize)]
struct RestRepo {
    #[serde(default)]
    node_id: Option<String>,
    name: String,
    owner: RestOwner,
    #[serde(default)]
    archived: bool,
    default_branch: Option<String>,
    html_url: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RestOwner {
    login: String,
}

/// What the registry recorded about a repository.
pub(super) type Recorded = RepoRecord;

impl Recorded {
    /// Whether `repo` is where this record says (GitHub's names ignore case).
    fn matches(&self, repo: &RepoInfo) -> bool {
        self.owner.eq_ignore_ascii_case(&repo.owner)
            && self.name.eq_ignore_ascii_case(&repo.name)
            && self.default_branch == repo.default_branch
    }
}

impl GithubStorage {
    pub(crate) fn new(client: Arc<Client>) -> Self {
        Self { client }
    }

    /// The installations to ask, the recorded one first, then the others
    /// that are not suspended; none in `tried`.
    fn candidates(
        recorded: Option<InstallationId>,
        installations: &[Installation],
        tried: &[InstallationId],
    ) -> Vec<InstallationId> {
        let others = installations
            .iter()
            .filter(|i| Some(i.id) != recorded && !i.suspended)
            .map(|i| i.id);
        recorded
            .into_iter()
            .chain(others)
            .filter(|id| !tried.contains(id))
            .collect()
    }

    /// Asks each candidate installation in turn; `Ok(None)` when none sees
    /// the repository.
    async fn ask(
        &self,
        id: RepoId,
        record: &Recorded,
        candidates: Vec<InstallationId>,
        tried: &mut Vec<InstallationId>,
    ) -> Result<Option<Observed>, Failure> {
        let recorded = record.installation;
        for installation in candidates {
            tried.push(installation);
            let guess = (Some(installation) == recorded).then_some(record);
            match self.read(installation, id, guess).await {
                Ok(Some(observed)) => return Ok(Some(observed)),
                Ok(None) => continue,
                Err(CallError::Suspended(suspended)) => {
                    self.client.mark_suspended(suspended);
                    if Some(suspended) == recorded {
                        return Err(Failure::new(CallError::Suspended(suspended))
                            .retry_after(SUSPENDED_RETRY));
                    }
                }
                Err(error) => return Err(error.into_failure()),
            }
        }
        Ok(None)
    }

    /// What `installation` sees of repository `id`; `None` when it does not
    /// see it at all (404 by id, or the installation is gone). With `guess`,
    /// the head is asked for under the recorded name meanwhile.
    async fn read(
        &self,
        installation: InstallationId,
        id: RepoId,
        guess: Option<&Recorded>,
    ) -> Result<Option<Observed>, CallError> {
        if self.client.is_suspended(installation) {
            return Err(CallError::Suspended(installation));
        }
        let url = join(&self.client.api_url, ["repositories", &id.to_string()])?;
        let guess = guess.filter(|g| !g.owner.is_empty() && !g.default_branch.is_empty());
        let early_head = async {
            match guess {
                Some(g) => Some(
                    self.head(installation, &g.owner, &g.name, &g.default_branch)
                        .await,
                ),
                None => None,
            }
        };
        let (by_id, early_head) =
            tokio::join!(self.client.get(installation, &url, JSON, true), early_head);
        let reply = match by_id {
            Err(CallError::InstallationGone(_)) => return Ok(None),
            other => other?,
        };
        let what = format!("GET /repositories/{id}");
        match reply.status {
            200 => {}
            404 => return Ok(None),
            status => {
                return Err(CallError::Status {
                    what,
                    status,
                    message: reply.message(),
                })
            }
        }
        let rest: RestRepo = parse(&what, &reply)?;
        if let Some(node_id) = rest.node_id.clone() {
            if let Err(error) = self.client.registry.record_node_ids(&[(id, node_id)]).await {
                tracing::warn!(repo = %id, %error, "could not store the repository's node id");
            }
        }
        let repo = RepoInfo {
            owner: rest.owner.login,
            name: rest.name,
            installation_id: Some(installation),
            default_branch: rest.default_branch.unwrap_or_default(),
            html_url: rest.html_url,
        };
        if rest.archived {
            return Ok(Some(Observed::Removed {
                repo: Some(repo),
                reason: "archived".into(),
            }));
        }
        // The early head counts only if it was asked where the repository is.
        let early_head = early_head.filter(|_| guess.is_some_and(|g| g.matches(&repo)));
        let file = self.file(installation, id, &repo, early_head).await?;
        Ok(Some(Observed::Present { repo, file }))
    }

    /// `GET /repos/{owner}/{name}/commits/{branch}`, the sha alone.
    async fn head(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        branch: &str,
    ) -> Result<Reply, CallError> {
        let head_url = join(
            &self.client.api_url,
            ["repos", owner, name, "commits"]
                .into_iter()
                .chain(branch.split('/')),
        )?;
        self.client.get(installation, &head_url, SHA, true).await
    }

    /// The project file at the head of the default branch; `early_head` is
    /// the answer for that head when it was already asked for.
    async fn file(
        &self,
        installation: InstallationId,
        repo_id: RepoId,
        repo: &RepoInfo,
        early_head: Option<Result<Reply, CallError>>,
    ) -> Result<FileState, CallError> {
        if repo.default_branch.is_empty() {
            return Ok(FileState::Absent { sha: None });
        }
        let (owner, name) = (repo.owner.as_str(), repo.name.as_str());
        let head = match early_head {
            Some(head) => head?,
            None => {
                self.head(installation, owner, name, &repo.default_branch)
                    .await?
            }
        };
        let what = format!("GET /repos/{owner}/{name}/commits/{}", repo.default_branch);
        let sha = match head.status {
            200 => head.body.trim().to_owned(),
            // "Git Repository is empty."
            409 => return Ok(FileState::Absent { sha: None }),
            status => {
                return Err(CallError::Status {
                    what,
                    status,
                    message: head.message(),
                })
            }
        };
        if sha.is_empty() || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CallError::unexpected(
                what,
                "the answer is not a commit sha",
            ));
        }

        if let Some(files) = &self.client.file_query {
            return files_at_commit::read_at(
                files,
                &self.client,
                installation,
                repo_id,
                (owner, name),
                sha,
            )
            .await;
        }
        let path = self.client.project_file.as_str();
        contents_at(&self.client, installation, (owner, name), path, sha).await
    }
}

impl GithubStorage {
    /// What the registry recorded for each of `ids` (unknown ids are absent).
    pub(super) async fn records(
        &self,
        ids: &[RepoId],
    ) -> Result<HashMap<RepoId, Recorded>, Failure> {
        self.client
            .registry
            .records(ids)
            .await
            .map_err(Failure::new)
    }

    /// One repository over REST by id: the recorded installation first,
    /// then every other one, before calling it gone.
    pub(super) async fn read_one(&self, key: RepoId) -> Result<Observed, Failure> {
        let record = self.records(&[key]).await?.remove(&key).unwrap_or_default();
        let recorded = record.installation;
        let mut tried = Vec::new();
        let known = self
            .client
            .installations()
            .await
            .map_err(CallError::into_failure)?;
        let candidates = Self::candidates(recorded, &known, &tried);
        if let Some(observed) = self.ask(key, &record, candidates, &mut tried).await? {
            return Ok(observed);
        }
        // Before calling it gone: the repository may have moved to an
        // installation made since the list was read.
        let fresh = self
            .client
            .refresh_installations()
            .await
            .map_err(CallError::into_failure)?;
        let candidates = Self::candidates(recorded, &fresh, &tried);
        if let Some(observed) = self.ask(key, &record, candidates, &mut tried).await? {
            return Ok(observed);
        }
        Ok(Observed::Removed {
            repo: None,
            reason: NOT_VISIBLE.into(),
        })
    }
}

/// How fast reads of repositories go before GitHub has told any budget:
/// a burst of triggers (a campaign's pushes, an installation) reads at
/// once, 100 repositories per query; a steady trickle above one trigger a
/// second shares a read a second, each trigger waiting at most about a
/// second. Sustained, that is 3,600 reads an hour, inside GitHub's 5,000
/// whatever the number of triggers (docs/operations.md#settings). Once
/// answers report the budget, the pace follows it ([`super::read_pace`]).
pub const READ_PACE: ReadPace = ReadPace {
    burst: 30,
    every: Duration::from_secs(1),
};

impl Storage for GithubStorage {
    type Key = RepoId;
    type State = Observed;

    async fn get(&self, key: &RepoId, hint: Option<&[u8]>) -> Result<Observed, Failure> {
        let state = match self.usable_hints(&[(*key, hint)]).await.remove(&0) {
            Some(observed) => Ok(observed),
            None => self.read_one(*key).await,
        };
        let mut states = [state];
        self.read_binaries(&[*key], &mut states).await;
        let [state] = states;
        state
    }

    async fn get_many(&self, items: &[(RepoId, Option<&[u8]>)]) -> Vec<Result<Observed, Failure>> {
        self.read_many(items).await
    }

    fn read_pace(&self) -> Option<ReadPace> {
        let now = SystemTime::now();
        let budgets = self.client.http.limits().installation_budgets(now);
        let reserved = budgets.into_iter().map(|(installation, budget)| {
            let pages = self.client.listing_pages(installation);
            (budget, read_pace::reserve(pages))
        });
        Some(read_pace::from_budgets(reserved, now).unwrap_or(READ_PACE))
    }
}

fn parse<T: for<'de> Deserialize<'de>>(what: &str, reply: &Reply) -> Result<T, CallError> {
    serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(what, e))
}
