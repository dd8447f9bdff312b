//! [`GithubStorage`]'s batch: the states of many repositories for the cost
//! of one GraphQL query per installation and 100 repositories.
//!
//! A key with a valid listing hint costs nothing. The others are grouped by
//! the installation the registry recorded for them and read with
//! [`super::read_query`]. What the query cannot decide — a repository it
//! cannot see, an answer about another repository, an error naming it, a
//! repository the registry knows nothing about — is read over REST by id,
//! as a single key always was: only its 404 makes a removal definite.

use std::collections::{BTreeMap, HashMap};

use futures_util::future::{join_all, BoxFuture};
use futures_util::stream::{self, StreamExt};
use serde_json::json;

use super::file_query::FileQuery;
use super::http::CallError;
use super::read_query::{read_query, read_query_for, slot_of, ReadData, Slot, MAX_PER_QUERY};
use super::refusal::{is_refusal, is_refusing, refused};
use super::storage::{GithubStorage, Recorded, SUSPENDED_RETRY};
use super::tree_walk::{self, Pending};
use crate::controller::{Failure, NoState};
use crate::source::{InstallationId, Observed, RepoId};

/// At most this many REST reads at once for the keys a batch left open.
const REST_CONCURRENCY: usize = 4;

/// What the batch query said about one key.
enum Verdict {
    /// A definite state, or a failure that a retry will fix.
    Decided(Result<Observed, Failure>),
    /// Read it over REST instead.
    Open,
}

/// One key of a query: where it sits in `items`, and what is asked.
struct Asked {
    index: usize,
    id: RepoId,
    slot: Slot,
}

/// A batch being read: its keys with their hints, what the registry
/// recorded of them, and each key's state once a read has decided it.
pub(super) struct Reading<'a> {
    pub items: &'a [(RepoId, Option<&'a [u8]>)],
    pub records: HashMap<RepoId, Recorded>,
    pub states: Vec<Option<Result<Observed, Failure>>>,
}

impl GithubStorage {
    /// See the module documentation; the states come in the order of `items`.
    pub(super) async fn read_many(
        &self,
        items: &[(RepoId, Option<&[u8]>)],
    ) -> Vec<Result<Observed, Failure>> {
        let mut states: Vec<Option<Result<Observed, Failure>>> = vec![None; items.len()];
        let mut hints = self.usable_hints(items).await;
        let mut unhinted = Vec::new();
        for (index, state) in states.iter_mut().enumerate() {
            match hints.remove(&index) {
                Some(observed) => *state = Some(Ok(observed)),
                None => unhinted.push(index),
            }
        }
        if !unhinted.is_empty() {
            let ids: Vec<RepoId> = unhinted.iter().map(|&i| items[i].0).collect();
            match self.records(&ids).await {
                Ok(records) => {
                    let mut reading = Reading {
                        items,
                        records,
                        states,
                    };
                    let unread = self.read_touched(&mut reading, &unhinted).await;
                    let open = self.read_recorded(&mut reading, &unread).await;
                    self.read_each(items, open, &mut reading.states).await;
                    states = reading.states;
                }
                Err(failure) => {
                    for index in unhinted {
                        states[index] = Some(Err(failure.clone()));
                    }
                }
            }
        }
        let mut states: Vec<_> = states
            .into_iter()
            .map(|s| s.unwrap_or_else(|| Err(Failure::new(NoState))))
            .collect();
        let ids: Vec<RepoId> = items.iter().map(|(id, _)| *id).collect();
        self.read_binaries(&ids, &mut states).await;
        states
    }

    /// Reads every key whose installation the registry knows with one query
    /// per installation and 100 keys (the queries run side by side); puts
    /// what they decide in `states` and returns the indexes left open.
    async fn read_recorded(&self, reading: &mut Reading<'_>, unhinted: &[usize]) -> Vec<usize> {
        let (items, records, states) = (reading.items, &reading.records, &mut reading.states);
        let mut open = Vec::new();
        let mut groups: BTreeMap<InstallationId, Vec<usize>> = BTreeMap::new();
        for &index in unhinted {
            match records.get(&items[index].0).and_then(|r| r.installation) {
                Some(installation) => groups.entry(installation).or_default().push(index),
                None => open.push(index),
            }
        }
        let queries = groups.iter().flat_map(|(&installation, indexes)| {
            indexes
                .chunks(MAX_PER_QUERY)
                .map(move |chunk| self.query(installation, items, chunk, records))
        });
        let mut learnt = Vec::new();
        for answers in join_all(queries).await {
            for (index, verdict, node_id) in answers {
                match verdict {
                    Verdict::Decided(state) => states[index] = Some(state),
                    Verdict::Open => open.push(index),
                }
                learnt.extend(node_id.map(|n| (items[index].0, n)));
            }
        }
        if let Err(error) = self.client.registry.record_node_ids(&learnt).await {
            // Only the next read's way of asking depends on it.
            tracing::warn!(%error, "could not store the repositories' node ids");
        }
        open
    }

    /// One query for `chunk` (keys of `installation`): each key's verdict,
    /// and its node id when the registry did not have that one yet. A
    /// query GitHub refuses for its size or time is asked again as two
    /// halves, down to one repository.
    fn query<'a>(
        &'a self,
        installation: InstallationId,
        items: &'a [(RepoId, Option<&[u8]>)],
        chunk: &'a [usize],
        records: &'a HashMap<RepoId, Recorded>,
    ) -> BoxFuture<'a, Vec<(usize, Verdict, Option<String>)>> {
        Box::pin(async move {
            match self.query_once(installation, items, chunk, records).await {
                Ok(verdicts) => verdicts,
                Err(_) if chunk.len() > 1 => {
                    let (first, second) = chunk.split_at(chunk.len() / 2);
                    tracing::info!(%installation, repositories = chunk.len(), "GitHub refused a batch read; asking in halves");
                    let mut verdicts = self.query(installation, items, first, records).await;
                    verdicts.extend(self.query(installation, items, second, records).await);
                    verdicts
                }
                Err(failure) => chunk
                    .iter()
                    .map(|&index| (index, Verdict::Decided(Err(failure.clone())), None))
                    .collect(),
            }
        })
    }

    /// [`Self::query`] asked once; `Err` when GitHub refused it for its
    /// size or time (only with patterns: one file never needs less).
    async fn query_once(
        &self,
        installation: InstallationId,
        items: &[(RepoId, Option<&[u8]>)],
        chunk: &[usize],
        records: &HashMap<RepoId, Recorded>,
    ) -> Result<Vec<(usize, Verdict, Option<String>)>, Failure> {
        let mut node_ids = Vec::new();
        let mut names = Vec::new();
        let mut asked = Vec::new();
        for &index in chunk {
            let id = items[index].0;
            let Some(record) = records.get(&id) else {
                continue;
            };
            let slot = match &record.node_id {
                Some(node_id) => {
                    node_ids.push(node_id.clone());
                    Slot::Node(node_ids.len() - 1)
                }
                None => {
                    names.push((record.owner.clone(), record.name.clone()));
                    Slot::Alias(names.len() - 1)
                }
            };
            asked.push(Asked { index, id, slot });
        }
        let every = |verdict: &dyn Fn() -> Verdict| {
            asked
                .iter()
                .map(|a| (a.index, verdict(), None))
                .collect::<Vec<_>>()
        };
        if self.client.is_suspended(installation) {
            return Ok(every(&|| suspended(installation)));
        }
        let files = self.client.file_query.as_ref();
        let mut variables = json!({ "ids": node_ids });
        if files.is_none() {
            variables["path"] = json!(self.client.project_file);
        }
        for (k, (owner, name)) in names.iter().enumerate() {
            variables[format!("o{k}")] = json!(owner);
            variables[format!("n{k}")] = json!(name);
        }
        let query = match files {
            Some(files) => read_query_for(files, names.len()),
            None => read_query(names.len()),
        };
        let answer = self
            .client
            .graphql_partial::<ReadData>(installation, &query, variables)
            .await;
        let (data, errors) = match answer {
            Ok(answer) => answer,
            Err(CallError::Suspended(id)) => {
                self.client.mark_suspended(id);
                return Ok(every(&|| suspended(id)));
            }
            // The REST path tries the other installations, then decides.
            Err(CallError::InstallationGone(_)) => return Ok(every(&|| Verdict::Open)),
            Err(error) if files.is_some() && is_refusal(&error) => {
                return Err(error.into_failure());
            }
            Err(error) => {
                let failure = error.into_failure();
                return Ok(every(&|| Verdict::Decided(Err(failure.clone()))));
            }
        };
        if files.is_some() && errors.iter().any(is_refusing) {
            return Err(refused("the batch read", &errors).into_failure());
        }
        let mut spoiled = Vec::new();
        for error in &errors {
            match slot_of(error) {
                Some(slot) => spoiled.push(slot),
                None => {
                    // An error about the query as a whole: no answer in it
                    // can be trusted, and a retry may do better.
                    let failure = Failure::new(CallError::Unexpected {
                        what: "the batch read".to_owned(),
                        message: error.message.clone(),
                    });
                    return Ok(every(&|| Verdict::Decided(Err(failure.clone()))));
                }
            }
        }
        let mut verdicts: Vec<_> = asked
            .iter()
            .map(|a| {
                if spoiled.contains(&a.slot) {
                    return (a.index, Verdict::Open, None, None);
                }
                let Some(node) = data.repository(a.slot) else {
                    return (a.index, Verdict::Open, None, None);
                };
                // A name can point at another repository since (a rename,
                // then a new repository under the old name).
                if node.database_id != Some(a.id.0) {
                    return (a.index, Verdict::Open, None, None);
                }
                let learnt = node
                    .id
                    .clone()
                    .filter(|n| records.get(&a.id).and_then(|r| r.node_id.as_ref()) != Some(n));
                let tree = node.tree_oid();
                match node.observe(installation, files) {
                    Some((_, observed)) => (a.index, Verdict::Decided(Ok(observed)), learnt, tree),
                    None => (a.index, Verdict::Open, None, None),
                }
            })
            .collect();
        if let Some(files) = files {
            self.walk_trees(files, installation, items, &mut verdicts)
                .await;
        }
        Ok(verdicts
            .into_iter()
            .map(|(index, verdict, learnt, _)| (index, verdict, learnt))
            .collect())
    }

    /// Adds what `**` patterns find (the Git trees API) to the decided
    /// verdicts.
    async fn walk_trees(
        &self,
        files: &FileQuery,
        installation: InstallationId,
        items: &[(RepoId, Option<&[u8]>)],
        verdicts: &mut [(usize, Verdict, Option<String>, Option<String>)],
    ) {
        let mut pending = Vec::new();
        let mut at = Vec::new();
        for (k, (index, verdict, _, tree)) in verdicts.iter_mut().enumerate() {
            if let Verdict::Decided(Ok(_)) = verdict {
                let Verdict::Decided(observed) = std::mem::replace(verdict, Verdict::Open) else {
                    continue;
                };
                pending.push(Pending {
                    id: items[*index].0,
                    tree: tree.take(),
                    observed,
                });
                at.push(k);
            }
        }
        tree_walk::complete(&self.client, files, installation, &mut pending).await;
        for (k, done) in at.into_iter().zip(pending) {
            verdicts[k].1 = Verdict::Decided(done.observed);
        }
    }

    /// Reads the `open` keys one by one over REST, a few at a time.
    async fn read_each(
        &self,
        items: &[(RepoId, Option<&[u8]>)],
        open: Vec<usize>,
        states: &mut [Option<Result<Observed, Failure>>],
    ) {
        let reads = stream::iter(open)
            .map(|index| async move { (index, self.read_one(items[index].0).await) })
            .buffer_unordered(REST_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        for (index, state) in reads {
            states[index] = Some(state);
        }
    }
}

fn suspended(installation: InstallationId) -> Verdict {
    Verdict::Decided(Err(
        Failure::new(CallError::Suspended(installation)).retry_after(SUSPENDED_RETRY)
    ))
}
