//! The relations of the files a check or a reconcile reads, against the
//! registry (docs/contract.md#relations): which names depended on are
//! entries (and their lifecycle), the names to suggest for one that is
//! not, and who depends on a name the files stop declaring. Every read
//! leaves out the repository's own entries of the files being read: what
//! those files declare now stands for them.
//!
//! The check's part ([`add_relation_notes`]) turns them into annotations
//! ([`crate::project::relations`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sqlx::PgConnection;

use crate::project::files_verdict::TouchedFile;
use crate::project::preview::RegisteredEntry;
use crate::project::relations::{
    annotate, declared, dependency_names, dependency_notes, removal_notes, Dependents,
    RegisteredRelations, RelationNote, RelationsMode, MAX_NAMED_DEPENDENTS,
};
use crate::project::verdict::{Parsed, Verdict};
use crate::project::ProjectFile;
use crate::registry::RegistryError;
use crate::source::RepoId;

/// Names read to suggest from at most: a registry larger than this gets
/// suggestions from the first of them by name.
const MAX_CANDIDATES: i64 = 20_000;

/// Which files are read, and who reads the answer.
#[derive(Debug, Clone, Copy)]
pub struct Reading<'a> {
    pub repo: RepoId,
    /// The paths of the files being read: the repository's entries there
    /// are what the files say now, not what the registry holds.
    pub paths: &'a [String],
    /// A public repository's check names only what public repositories
    /// hold (docs/contract.md#bounds).
    pub public: bool,
}

/// The entries (outside the files being read) among `names`, with their
/// lifecycle: one indexed statement. A public repository's check finds
/// only what public repositories (and its own) hold: a private project
/// reads as missing, so neither its lifecycle nor the conclusion tells it
/// from a name nobody has.
pub(crate) async fn found(
    conn: &mut PgConnection,
    reading: &Reading<'_>,
    names: &[String],
) -> Result<HashMap<String, Option<String>>, RegistryError> {
    if names.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, Option<String>)> = sqlx::query_as(
        "select e.name, e.lifecycle from entries e
         left join repo_visibility v on v.repo_id = e.repo_id
         where e.name = any($1::text[]) and not (e.repo_id = $2 and e.path = any($3::text[]))
           and (not $4 or e.repo_id = $2 or coalesce(v.public, false))",
    )
    .bind(names)
    .bind(reading.repo)
    .bind(reading.paths)
    .bind(reading.public)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Names to suggest for `unknown` ones: entries whose length is near one
/// of theirs, that the reader may see.
pub(crate) async fn candidates(
    conn: &mut PgConnection,
    reading: &Reading<'_>,
    unknown: &[&str],
) -> Result<Vec<String>, RegistryError> {
    let lengths = unknown.iter().map(|n| n.chars().count() as i32);
    let (Some(shortest), Some(longest)) = (lengths.clone().min(), lengths.max()) else {
        return Ok(Vec::new());
    };
    Ok(sqlx::query_scalar(
        "select e.name from entries e
         left join repo_visibility v on v.repo_id = e.repo_id
         where char_length(e.name) between $1 - 3 and $2 + 3
           and not (e.repo_id = $3 and e.path = any($4::text[]))
           and (not $5 or e.repo_id = $3 or coalesce(v.public, false))
         order by e.name
         limit $6",
    )
    .bind(shortest)
    .bind(longest)
    .bind(reading.repo)
    .bind(reading.paths)
    .bind(reading.public)
    .bind(MAX_CANDIDATES)
    .fetch_all(conn)
    .await?)
}

/// Who depends on each of `names` (outside the files being read): how
/// many, and the first `named` by name that the reader may see.
pub(crate) async fn dependents(
    conn: &mut PgConnection,
    reading: &Reading<'_>,
    names: &[String],
    named: usize,
) -> Result<BTreeMap<String, Dependents>, sqlx::Error> {
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let rows: Vec<(String, i64, Vec<String>)> = sqlx::query_as(
        "select t.name,
                (select count(*) from entries e
                 where e.depends_on @> array[t.name]
                   and not (e.repo_id = $2 and e.path = any($3::text[]))),
                array(select e.name from entries e
                      left join repo_visibility v on v.repo_id = e.repo_id
                      where e.depends_on @> array[t.name]
                        and not (e.repo_id = $2 and e.path = any($3::text[]))
                        and (not $4 or e.repo_id = $2 or coalesce(v.public, false))
                      order by e.name
                      limit $5)
         from unnest($1::text[]) as t(name)",
    )
    .bind(names)
    .bind(reading.repo)
    .bind(reading.paths)
    .bind(reading.public)
    .bind(i64::try_from(named).unwrap_or(i64::MAX))
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, total, named)| {
            let total = usize::try_from(total).unwrap_or(0);
            (name, Dependents { named, total })
        })
        .collect())
}

/// What the registry holds of the dependencies of `files`: the entries
/// found, and, when some name none, the names to suggest.
pub(crate) async fn registered_for(
    conn: &mut PgConnection,
    reading: &Reading<'_>,
    files: &[&ProjectFile],
) -> Result<RegisteredRelations, RegistryError> {
    let local = declared(files.iter().copied());
    let wanted: Vec<String> = dependency_names(files.iter().copied())
        .into_iter()
        .filter(|name| !local.contains_key(name))
        .collect();
    let found = found(conn, reading, &wanted).await?;
    let unknown: Vec<&str> = wanted
        .iter()
        .filter(|name| !found.contains_key(*name))
        .map(String::as_str)
        .collect();
    let candidates = match unknown.is_empty() {
        true => Vec::new(),
        false => candidates(conn, reading, &unknown).await?,
    };
    Ok(RegisteredRelations {
        found,
        candidates,
        dependents: BTreeMap::new(),
    })
}

/// One file a check reads: its path and what the rules made of it
/// (`Parsed::Absent` for a file the pull request removes).
pub struct CheckedFile<'a> {
    pub path: &'a str,
    pub parsed: &'a Parsed,
}

impl<'a> CheckedFile<'a> {
    /// The files of an evaluation of several files, read as one check
    /// reads them.
    pub fn all(touched: &'a [TouchedFile]) -> Vec<Self> {
        touched
            .iter()
            .map(|t| CheckedFile {
                path: &t.path,
                parsed: &t.parsed,
            })
            .collect()
    }
}

/// Adds the relation annotations of `files` to `verdict`: dependencies on
/// no project, production on deprecated, and removals others depend on.
/// `registered` are the repository's entries now. Nothing is added when
/// relations are not checked. A removal fails only a pull request's check
/// (under `require`): on the default branch it is done, and a warning.
pub async fn add_relation_notes(
    conn: &mut PgConnection,
    mode: RelationsMode,
    reading: &Reading<'_>,
    files: &[CheckedFile<'_>],
    registered: &[RegisteredEntry],
    verdict: &mut Verdict,
    pull_request: bool,
) -> Result<(), RegistryError> {
    if mode == RelationsMode::Off {
        return Ok(());
    }
    let valid: Vec<(&str, &ProjectFile, &str)> = files
        .iter()
        .filter_map(|f| match f.parsed {
            Parsed::Valid { file, text } => Some((f.path, file, text.as_str())),
            _ => None,
        })
        .collect();
    let projects: Vec<&ProjectFile> = valid.iter().map(|(_, file, _)| *file).collect();
    let mut relations = registered_for(conn, reading, &projects).await?;
    // Names a valid or removed file held before and no longer declares.
    let declared_now: BTreeSet<String> = declared(projects.iter().copied()).into_keys().collect();
    let mut removed_by_path: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for file in files {
        if matches!(file.parsed, Parsed::Valid { .. } | Parsed::Absent) {
            let gone = registered
                .iter()
                .filter(|e| e.path == file.path && !declared_now.contains(&e.name))
                .map(|e| e.name.clone());
            removed_by_path.entry(file.path).or_default().extend(gone);
        }
    }
    let removed: Vec<String> = removed_by_path.values().flatten().cloned().collect();
    let named = MAX_NAMED_DEPENDENTS + 1;
    relations.dependents = dependents(conn, reading, &removed, named).await?;
    let local = declared(projects.iter().copied());
    let mut notes: Vec<RelationNote> = Vec::new();
    for (path, file, text) in &valid {
        notes.extend(dependency_notes(path, file, text, &local, &relations, mode));
    }
    for (path, removed) in &removed_by_path {
        let head = valid
            .iter()
            .find(|(p, _, _)| p == path)
            .map(|(_, file, text)| (*file, *text));
        let kept: Vec<String> = registered
            .iter()
            .filter(|e| e.path == *path && declared_now.contains(&e.name))
            .map(|e| e.name.clone())
            .collect();
        let removals = match pull_request {
            true => mode,
            false => RelationsMode::Warn,
        };
        notes.extend(removal_notes(
            path, head, removed, &kept, &relations, removals,
        ));
    }
    annotate(verdict, &notes, mode);
    Ok(())
}
