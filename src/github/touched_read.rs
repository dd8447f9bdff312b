//! [`GithubStorage`]'s partial read of pushes that touched project files
//! (docs/architecture.md#pushes-that-touch-project-files): each repository
//! whose registry still holds the push's `before` has only its touched
//! paths read, at the push's `after`, one GraphQL query per installation
//! and 100 repositories. The answer is a [`FileState::Touched`], which the
//! registry applies only if it still holds `before`. Whatever the query
//! cannot decide is left to the full read.

use std::collections::{BTreeMap, HashMap};

use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::batch_read::Reading;
use super::file_query::{file_answer, FileQuery};
use super::graphql::RepoNode;
use super::read_query::MAX_PER_QUERY;
use super::storage::{GithubStorage, Recorded};
use crate::source::touched_push::TouchedPush;
use crate::source::{
    FileState, InstallationId, Observed, PathFile, RepoId, RepoInfo, TouchedFiles,
};

/// The blob's fields, as every query asks them.
const BLOB: &str = "mode object { ... on Blob { oid byteSize isBinary isTruncated text } }";

/// One repository of the query: where it sits in the batch, and what its
/// push touched (the paths the current patterns match).
struct Asked<'a> {
    index: usize,
    id: RepoId,
    node_id: &'a str,
    default_branch: &'a str,
    before: String,
    after: String,
    paths: Vec<String>,
}

impl GithubStorage {
    /// Reads in part the keys of `unhinted` that carry what their push
    /// touched, puts what that decides in `states`, and returns the
    /// indexes left for the full read (with one fixed path there is no
    /// partial read: the full one costs the same).
    pub(super) async fn read_touched(
        &self,
        reading: &mut Reading<'_>,
        unhinted: &[usize],
    ) -> Vec<usize> {
        let (items, records, states) = (reading.items, &reading.records, &mut reading.states);
        let Some(files) = self.client.file_query.as_ref() else {
            return unhinted.to_vec();
        };
        let mut rest = Vec::new();
        let mut candidates = Vec::new();
        for &index in unhinted {
            let (id, scope) = items[index];
            let touched = scope.and_then(TouchedPush::decode);
            let record = records.get(&id);
            match (touched, record) {
                (Some(touched), Some(record)) => candidates.push((index, touched, record)),
                _ => rest.push(index),
            }
        }
        if candidates.is_empty() {
            return rest;
        }
        let ids: Vec<RepoId> = candidates.iter().map(|(i, ..)| items[*i].0).collect();
        let commits = match self.client.registry.recorded_commits(&ids).await {
            Ok(commits) => commits,
            Err(error) => {
                tracing::warn!(%error, "cannot compare pushes with the registry; reading whole");
                HashMap::new()
            }
        };
        let mut groups: BTreeMap<InstallationId, Vec<Asked<'_>>> = BTreeMap::new();
        for (index, touched, record) in candidates {
            let id = items[index].0;
            let asked = asked(files, index, id, touched, record, &commits);
            match (asked, record.installation) {
                (Some(asked), Some(installation)) => {
                    groups.entry(installation).or_default().push(asked);
                }
                _ => rest.push(index),
            }
        }
        let queries = groups.iter().flat_map(|(&installation, asked)| {
            asked
                .chunks(MAX_PER_QUERY)
                .map(move |chunk| self.query_touched(installation, chunk))
        });
        for answers in join_all(queries).await {
            for (index, observed) in answers {
                match observed {
                    Some(observed) => states[index] = Some(Ok(observed)),
                    None => rest.push(index),
                }
            }
        }
        rest
    }

    /// One query for `chunk`: each key's partial observation, or `None`
    /// (read it whole).
    async fn query_touched(
        &self,
        installation: InstallationId,
        chunk: &[Asked<'_>],
    ) -> Vec<(usize, Option<Observed>)> {
        let none = || chunk.iter().map(|a| (a.index, None)).collect();
        if self.client.is_suspended(installation) {
            return none();
        }
        let (query, variables) = touched_query(chunk);
        let answer = self
            .client
            .graphql_partial::<Map<String, Value>>(installation, &query, variables)
            .await;
        let (data, errors) = match answer {
            Ok(answer) => answer,
            Err(error) => {
                tracing::info!(%installation, %error, "the partial read failed; reading whole");
                return none();
            }
        };
        let mut spoiled = Vec::new();
        for error in &errors {
            match error.path.first().and_then(Value::as_str) {
                Some(alias) => spoiled.push(alias.to_owned()),
                None => return none(),
            }
        }
        chunk
            .iter()
            .enumerate()
            .map(|(k, asked)| {
                let alias = format!("r{k}");
                if spoiled.contains(&alias) {
                    return (asked.index, None);
                }
                let observed = data
                    .get(&alias)
                    .and_then(|node| observe(node, installation, asked));
                (asked.index, observed)
            })
            .collect()
    }
}

/// What is asked for key `id` of a push that `touched` project files,
/// when the registry holds its `before` (`commits`) and knows its node id.
fn asked<'a>(
    files: &FileQuery,
    index: usize,
    id: RepoId,
    touched: TouchedPush,
    record: &'a Recorded,
    commits: &HashMap<RepoId, String>,
) -> Option<Asked<'a>> {
    if commits.get(&id) != Some(&touched.before) || record.default_branch.is_empty() {
        return None;
    }
    // Patterns changed since the push was taken in: a full read decides.
    if !touched.paths.iter().all(|p| files.files().matches(p)) {
        return None;
    }
    Some(Asked {
        index,
        id,
        node_id: record.node_id.as_deref()?,
        default_branch: &record.default_branch,
        before: touched.before,
        after: touched.after,
        paths: touched.paths,
    })
}

/// The query for `chunk`: repository `rK` by node id (`$iK`), with the
/// file at each touched path (`fJ`, `$pK_J`) inside commit `$cK`.
fn touched_query(chunk: &[Asked<'_>]) -> (String, Value) {
    let mut header = Vec::new();
    let mut body = String::new();
    let mut variables = Map::new();
    for (k, asked) in chunk.iter().enumerate() {
        header.push(format!("$i{k}: ID!, $c{k}: GitObjectID!"));
        variables.insert(format!("i{k}"), json!(asked.node_id));
        variables.insert(format!("c{k}"), json!(asked.after));
        let mut files = String::new();
        for (j, path) in asked.paths.iter().enumerate() {
            header.push(format!("$p{k}_{j}: String!"));
            variables.insert(format!("p{k}_{j}"), json!(path));
            files.push_str(&format!(
                "          f{j}: file(path: $p{k}_{j}) {{ {BLOB} }}\n"
            ));
        }
        body.push_str(&format!(
            "  r{k}: node(id: $i{k}) {{
    ... on Repository {{
      id databaseId name owner {{ login }} isArchived url defaultBranchRef {{ name }}
      at: object(oid: $c{k}) {{
        ... on Commit {{
{files}        }}
      }}
    }}
  }}
"
        ));
    }
    let query = format!(
        "query ReadTouched({}) {{
  rateLimit {{ limit remaining resetAt cost }}
{body}}}
",
        header.join(", ")
    );
    (query, Value::Object(variables))
}

/// The query for `repos` repositories of `paths` touched paths each, as
/// a batch asks it: the schema test checks it against GitHub's schema.
pub fn query_for(repos: usize, paths: usize) -> String {
    let paths: Vec<String> = (0..paths).map(|j| format!("s/{j}/project.yaml")).collect();
    let asked: Vec<Asked<'_>> = (0..repos)
        .map(|k| Asked {
            index: k,
            id: RepoId(i64::try_from(k).unwrap_or_default()),
            node_id: "R_1",
            default_branch: "main",
            before: "a".into(),
            after: "b".into(),
            paths: paths.clone(),
        })
        .collect();
    touched_query(&asked).0
}

/// The partial observation in `node` (the answer for `asked`); `None`
/// when only a full read can say (another repository, archived, another
/// default branch, the commit unknown).
fn observe(node: &Value, installation: InstallationId, asked: &Asked<'_>) -> Option<Observed> {
    let repo = RepoNode::deserialize(node).ok()?;
    let branch = repo.default_branch_ref?.name;
    if repo.database_id != Some(asked.id.0) || repo.is_archived || branch != asked.default_branch {
        return None;
    }
    let commit = node.get("at").filter(|at| at.is_object())?;
    let mut files = Vec::new();
    let mut gone = Vec::new();
    for (j, path) in asked.paths.iter().enumerate() {
        let answer = commit.get(format!("f{j}")).unwrap_or(&Value::Null);
        match file_answer(path, answer) {
            Some(content) => files.push(PathFile {
                path: path.clone(),
                content,
            }),
            None => gone.push(path.clone()),
        }
    }
    let info = RepoInfo {
        owner: repo.owner.login,
        name: repo.name,
        installation_id: Some(installation),
        default_branch: branch,
        html_url: repo.url,
    };
    let file = FileState::Touched(Box::new(TouchedFiles {
        before: asked.before.clone(),
        sha: asked.after.clone(),
        files,
        gone,
    }));
    Some(Observed::Present { repo: info, file })
}

#[cfg(test)]
mod tests;
