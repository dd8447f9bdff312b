//! The periodic org-wide listing: every installation, every page.
//!
//! Each installation is one partition (`installation/<id>`), walked with the
//! GraphQL listing query, 100 repositories and their project files a page.
//! Every repository found is enqueued with a hint: the [`Observed`] the page
//! already shows, so the worker does not read GitHub again unless a newer
//! trigger for that repository arrives first. A partition with a failed
//! page reports `Err`: the sweep then leaves it alone.
//!
//! Two partitions have no pages: a suspended installation (its known
//! repositories are enqueued so they show the suspension, outcome `Err`, so
//! nothing is swept) and an installation the registry still remembers but
//! GitHub no longer lists (the App was uninstalled: an empty, complete
//! partition, so the sweep asks GitHub about each repository, and only the
//! definite answer removes them).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use super::auth::Installation;
use super::client::Client;
use super::directory::DirectoryReader;
use super::graphql::{list_query, ListData, LIST_REPOSITORIES};
use super::http::CallError;
use super::listing_hint::Hint;
use super::refusal::{is_refusal, is_refusing, refused};
use super::tree_walk::{self, Pending};
use crate::controller::{Enqueue, Failure, Found, Listed, Lister, Trigger};
use crate::db::queue;
use crate::source::{self, InstallationId, Observed, RepoId};

/// At most this many pages (100 repositories each) per installation.
const MAX_PAGES: usize = 10_000;

/// Repositories a listing page asks for (GitHub's most for a connection).
const PAGE_SIZE: usize = 100;

/// Pause before the one retry of a page that failed for a passing reason.
const PAGE_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Lists every repository of every installation of the App.
#[derive(Debug, Clone)]
pub struct GithubLister {
    client: Arc<Client>,
}

impl GithubLister {
    pub(crate) fn new(client: Arc<Client>) -> Self {
        Self { client }
    }

    /// Lists one installation, sending each page's repositories to `found`
    /// as soon as it arrives.
    async fn list_installation(
        &self,
        installation: &Installation,
        found: &Found<RepoId>,
    ) -> Listed<RepoId, source::Partition> {
        let partition = partition_of(installation.id);
        if installation.suspended {
            return self.suspended(installation.id, partition, found).await;
        }
        // Only the keys stay here, for the sweep; each page's hints go to
        // the workers with `found`, so a large organisation's files are not
        // all held at once.
        let mut items = Vec::new();
        let mut after: Option<String> = None;
        // Repositories a page; fewer while GitHub refuses a page's size.
        let mut size = PAGE_SIZE;
        // The listing's own time: first page asked to last page answered.
        let first_asked = std::time::Instant::now();
        for pages in 1..=MAX_PAGES {
            self.client
                .record_listing_pages(installation.id, pages, false);
            // Taken before the request: whatever is applied after it is
            // at least as new as what this page reads.
            let read_at = chrono::Utc::now();
            let page = match self.page(installation, after.as_deref(), size).await {
                Ok(page) => {
                    size = (size * 2).min(PAGE_SIZE);
                    page
                }
                Err(error)
                    if size > 1 && self.client.file_query.is_some() && is_refusal(&error) =>
                {
                    size /= 2;
                    tracing::info!(installation = %installation.id, %error, size, "GitHub refused a listing page; asking for fewer repositories");
                    continue;
                }
                Err(CallError::Suspended(id)) => {
                    self.client.mark_suspended(id);
                    return self.suspended(id, partition, found).await;
                }
                Err(error) => {
                    tracing::warn!(installation = %installation.id, %error, "listing stopped part-way");
                    return Listed {
                        partition,
                        items,
                        outcome: Err(error.into_failure()),
                    };
                }
            };
            let connection = match page.repository_owner {
                Some(owner) => owner.repositories,
                None => {
                    let unknown = CallError::Unexpected {
                        what: "the repository listing".to_owned(),
                        message: format!("no account {:?}", installation.account),
                    };
                    return Listed {
                        partition,
                        items,
                        outcome: Err(unknown.into_failure()),
                    };
                }
            };
            let mut pending = Vec::new();
            let mut visibility = Vec::new();
            for node in connection.nodes.into_iter().flatten() {
                let tree = node.tree_oid();
                if let (Some(id), Some(private)) = (node.database_id, node.is_private) {
                    visibility.push((RepoId(id), !private));
                }
                let Some((id, observed)) =
                    node.observe(installation.id, self.client.file_query.as_ref())
                else {
                    continue;
                };
                items.push(Enqueue::because(id, Trigger::Listing));
                pending.push(Pending {
                    id,
                    tree,
                    observed: Ok(observed),
                });
            }
            // What a public repository's check may name; a failure costs
            // only names a check leaves out, so the listing goes on.
            if let Err(error) = self.client.registry.record_visibility(&visibility).await {
                tracing::warn!(installation = %installation.id, %error, "could not store the repositories' visibility");
            }
            if let Some(files) = &self.client.file_query {
                tree_walk::complete(&self.client, files, installation.id, &mut pending).await;
            }
            let page_items: Vec<_> = pending
                .into_iter()
                .map(|p| match p.observed {
                    Ok(observed) => hinted(p.id, observed, read_at),
                    // The worker reads it afresh, and retries what fails.
                    Err(_) => Enqueue::because(p.id, Trigger::Listing),
                })
                .collect();
            // The receiver only goes away when the controller stops.
            let _ = found.send(page_items);
            match (
                connection.page_info.has_next_page,
                connection.page_info.end_cursor,
            ) {
                (true, Some(cursor)) => after = Some(cursor),
                (true, None) => {
                    let failure = CallError::Unexpected {
                        what: "the repository listing".to_owned(),
                        message: "more pages follow but no cursor was given".to_owned(),
                    }
                    .into_failure();
                    return Listed {
                        partition,
                        items,
                        outcome: Err(failure),
                    };
                }
                (false, _) => {
                    self.client
                        .record_listing_pages(installation.id, pages, true);
                    tracing::info!(
                        installation = %installation.id,
                        pages,
                        duration_ms = first_asked.elapsed().as_millis() as u64,
                        "installation listed"
                    );
                    return Listed {
                        partition,
                        items,
                        outcome: Ok(()),
                    };
                }
            }
        }
        Listed {
            partition,
            items,
            outcome: Err(CallError::Unexpected {
                what: "the repository listing".to_owned(),
                message: "too many pages".to_owned(),
            }
            .into_failure()),
        }
    }

    /// One page, retried once when it failed for a passing reason (GitHub's
    /// GraphQL endpoint answers the odd 502 under load); never after a rate
    /// limit. With patterns, `size` repositories, and a refusal for size or
    /// time is the caller's to answer (with a smaller page).
    async fn page(
        &self,
        installation: &Installation,
        after: Option<&str>,
        size: usize,
    ) -> Result<ListData, CallError> {
        if let Some(files) = &self.client.file_query {
            let variables = serde_json::json!({
                "owner": installation.account,
                "after": after,
                "first": size,
            });
            let what = format!("POST {} (GraphQL)", self.client.graphql_url.path());
            let (data, errors) = self
                .client
                .graphql_partial(installation.id, &list_query(files), variables)
                .await?;
            if errors.iter().any(is_refusing) {
                return Err(refused(&what, &errors));
            }
            if !errors.is_empty() {
                let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
                return Err(CallError::unexpected(what, messages.join("; ")));
            }
            return Ok(data);
        }
        let variables = serde_json::json!({
            "owner": installation.account,
            "after": after,
            "path": self.client.project_file,
        });
        let first = self
            .client
            .graphql(installation.id, LIST_REPOSITORIES, variables.clone())
            .await;
        match first {
            Err(CallError::Timeout { .. } | CallError::Transport { .. }) => {}
            Err(CallError::Status { status, .. }) if status >= 500 => {}
            other => return other,
        }
        tokio::time::sleep(PAGE_RETRY_DELAY).await;
        self.client
            .graphql(installation.id, LIST_REPOSITORIES, variables)
            .await
    }

    /// A suspended installation: its known repositories, to show the
    /// suspension, and an `Err` outcome so none is swept.
    async fn suspended(
        &self,
        installation: InstallationId,
        partition: source::Partition,
        found: &Found<RepoId>,
    ) -> Listed<RepoId, source::Partition> {
        let known = self
            .client
            .registry
            .tracked_ids(partition_of(installation))
            .await
            .unwrap_or_else(|error| {
            tracing::warn!(%installation, %error, "could not read the suspended installation's repositories");
            Vec::new()
        });
        let items: Vec<_> = known
            .into_iter()
            .map(|id| Enqueue::because(id, Trigger::Listing))
            .collect();
        let _ = found.send(items.clone());
        Listed {
            partition,
            items,
            outcome: Err(CallError::Suspended(installation).into_failure()),
        }
    }

    /// Installations the registry remembers that GitHub no longer lists.
    async fn vanished(&self, listed: &[Installation]) -> Vec<Listed<RepoId, source::Partition>> {
        let remembered = self.client.registry.installations().await;
        let remembered = match remembered {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, "could not read the remembered installations");
                return Vec::new();
            }
        };
        let listed: BTreeSet<InstallationId> = listed.iter().map(|i| i.id).collect();
        remembered
            .into_iter()
            .filter(|id| !listed.contains(id))
            .map(|id| Listed {
                partition: source::Partition::Installation(id),
                items: Vec::new(),
                outcome: Ok(()),
            })
            .collect()
    }
}

impl Lister for GithubLister {
    type Key = RepoId;
    type Partition = source::Partition;

    /// The partitions with every hint, gathered from what the listing sent.
    async fn list(&self) -> Result<Vec<Listed<RepoId, source::Partition>>, Failure> {
        let (found, mut sent) = tokio::sync::mpsc::unbounded_channel();
        let mut partitions = self.list_streaming(found).await?;
        let mut hinted = HashMap::new();
        while let Ok(batch) = sent.try_recv() {
            hinted.extend(batch.into_iter().map(|item| (item.key, item)));
        }
        for partition in &mut partitions {
            for item in &mut partition.items {
                if let Some(sent) = hinted.remove(&item.key) {
                    *item = sent;
                }
            }
        }
        Ok(partitions)
    }

    async fn list_streaming(
        &self,
        found: Found<RepoId>,
    ) -> Result<Vec<Listed<RepoId, source::Partition>>, Failure> {
        let installations = match self.client.refresh_installations().await {
            Ok(installations) => installations,
            Err(error) => {
                // Found nothing: a request that waited for this listing
                // asks for another.
                if let Err(error) = queue::partitions_found(&self.client.pool, &[]).await {
                    tracing::warn!(%error, "could not record that the listing found nothing");
                }
                return Err(error.into_failure());
            }
        };
        // Found now, listed from now: a request about how one of them was
        // created, or one that waited for this listing, needs no other
        // listing (one trigger, one listing).
        let partitions: Vec<String> = installations
            .iter()
            .map(|i| partition_of(i.id).to_string())
            .collect();
        if let Err(error) = queue::partitions_found(&self.client.pool, &partitions).await {
            tracing::warn!(%error, "could not record the installations the listing found");
        }
        let listings = installations.iter().map(|i| async {
            let listed = self.list_installation(i, &found).await;
            if listed.outcome.is_err() {
                let partition = listed.partition.to_string();
                if let Err(error) = queue::partition_unlisted(&self.client.pool, &partition).await {
                    tracing::warn!(%error, %partition, "could not record a listing stopped part-way");
                }
            }
            listed
        });
        // Each organisation's teams and members, alongside its repositories.
        let reader = DirectoryReader::new(self.client.clone());
        let directories = installations.iter().map(|i| reader.read_installation(i));
        let (mut partitions, _) = tokio::join!(join_all(listings), join_all(directories));
        partitions.extend(self.vanished(&installations).await);
        Ok(partitions)
    }
}

/// The partition of an installation's repositories.
fn partition_of(installation: InstallationId) -> source::Partition {
    source::Partition::Installation(installation)
}

/// A key with the observation it was listed with, and when its page was
/// asked for.
fn hinted(
    id: RepoId,
    observed: Observed,
    read_at: chrono::DateTime<chrono::Utc>,
) -> Enqueue<RepoId> {
    // Serialising plain data cannot fail; if it ever did, the worker reads afresh.
    Enqueue {
        key: id,
        hint: serde_json::to_vec(&Hint { read_at, observed }).ok(),
        trigger: Trigger::Listing,
    }
}
