//! The registry as a source sees it: what was recorded about repositories
//! (to ask GitHub the right way), which ones it tracks, and the node ids a
//! source learns. Sources hold this handle, never the database itself, so
//! every statement on the registry's tables stays in this module.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::tracker::{remembered_installations, tracked_ids};
use super::{record_node_ids, record_visibility, RegistryError};
use crate::source::{InstallationId, Partition, RepoId};

crate::row! {
    /// Where the registry last saw a repository: the installation, the name
    /// and default branch its head is most likely found under, and the node id
    /// GitHub's GraphQL API knows it by.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct RepoRecord {
        /// The installation that saw it (`None`: the local folder).
        pub installation: Option<InstallationId>,
        pub owner: String,
        pub name: String,
        /// Empty when not known yet.
        pub default_branch: String,
        /// GitHub's GraphQL node id, when learnt.
        pub node_id: Option<String>,
    }
}

/// A handle on the registry for the sources; cheap to clone.
#[derive(Debug, Clone)]
pub struct RegistryDb {
    pool: PgPool,
}

impl RegistryDb {
    /// The handle on the registry in `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// What the registry recorded for each of `ids` (unknown ids are absent).
    pub async fn records(
        &self,
        ids: &[RepoId],
    ) -> Result<HashMap<RepoId, RepoRecord>, RegistryError> {
        crate::row! {
            struct Row {
                id: RepoId,
                record: RepoRecord as flatten,
            }
        }
        let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<Row> = sqlx::query_as(
            "select id, installation_id as installation, owner, name,
                    coalesce(default_branch, '') as default_branch, node_id
             from repositories where id = any($1)",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|row| (row.id, row.record)).collect())
    }

    /// Which of `items` had an observation applied after the time given
    /// with it: a listing's answer read before then is older than what the
    /// registry holds.
    pub async fn observed_since(
        &self,
        items: &[(RepoId, DateTime<Utc>)],
    ) -> Result<HashSet<RepoId>, RegistryError> {
        if items.is_empty() {
            return Ok(HashSet::new());
        }
        let (ids, times): (Vec<i64>, Vec<DateTime<Utc>>) =
            items.iter().map(|(id, at)| (id.0, *at)).unzip();
        let newer: Vec<RepoId> = sqlx::query_scalar(
            "select r.id from repositories r
             join unnest($1::bigint[], $2::timestamptz[]) as h(id, read_at) on h.id = r.id
             where r.observed_at > h.read_at",
        )
        .bind(&ids)
        .bind(&times)
        .fetch_all(&self.pool)
        .await?;
        Ok(newer.into_iter().collect())
    }

    /// Which of `items` (a repository and a file's blob id) the registry
    /// holds `invalid` for that very blob: its judgement of the blob stands,
    /// and the file need not be read again to make it.
    pub async fn judged_blobs(
        &self,
        items: &[(RepoId, String)],
    ) -> Result<HashSet<RepoId>, RegistryError> {
        if items.is_empty() {
            return Ok(HashSet::new());
        }
        let (ids, blobs): (Vec<i64>, Vec<&str>) =
            items.iter().map(|(id, blob)| (id.0, blob.as_str())).unzip();
        let judged: Vec<RepoId> = sqlx::query_scalar(
            "select r.id from repositories r
             join unnest($1::bigint[], $2::text[]) as b(id, blob) on b.id = r.id
             where r.status = 'invalid' and r.file_blob = b.blob",
        )
        .bind(&ids)
        .bind(&blobs)
        .fetch_all(&self.pool)
        .await?;
        Ok(judged.into_iter().collect())
    }

    /// Which of `items` (a repository, a path among its several project
    /// files, and that file's blob id) the registry holds `invalid` with
    /// that very blob recorded at that path: its judgement of the file
    /// stands, and the file need not be read again to make it.
    pub async fn judged_files(
        &self,
        items: &[(RepoId, String, String)],
    ) -> Result<HashSet<(RepoId, String)>, RegistryError> {
        if items.is_empty() {
            return Ok(HashSet::new());
        }
        let ids: Vec<i64> = items.iter().map(|(id, ..)| id.0).collect();
        let paths: Vec<&str> = items.iter().map(|(_, path, _)| path.as_str()).collect();
        let blobs: Vec<&str> = items.iter().map(|(.., blob)| blob.as_str()).collect();
        let judged: Vec<(i64, String)> = sqlx::query_as(
            "select r.id, b.path from repositories r
             join unnest($1::bigint[], $2::text[], $3::text[]) as b(id, path, blob) on b.id = r.id
             where r.status = 'invalid' and r.file_blobs ->> b.path = b.blob",
        )
        .bind(&ids)
        .bind(&paths)
        .bind(&blobs)
        .fetch_all(&self.pool)
        .await?;
        Ok(judged
            .into_iter()
            .map(|(id, path)| (RepoId(id), path))
            .collect())
    }

    /// The commit each of `ids` is recorded at, for those `synced` or
    /// `no_file` (whose every project file is as of that commit): a push
    /// from there may be read in part.
    pub async fn recorded_commits(
        &self,
        ids: &[RepoId],
    ) -> Result<HashMap<RepoId, String>, RegistryError> {
        let ids: Vec<i64> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<(RepoId, String)> = sqlx::query_as(
            "select id, synced_sha from repositories
             where id = any($1) and status in ('synced', 'no_file') and synced_sha is not null",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().collect())
    }

    /// The repositories tracked in `partition`, removed ones excluded.
    pub async fn tracked_ids(&self, partition: Partition) -> Result<Vec<RepoId>, RegistryError> {
        Ok(tracked_ids(&self.pool, partition).await?)
    }

    /// The installations some tracked repository still belongs to.
    pub async fn installations(&self) -> Result<Vec<InstallationId>, RegistryError> {
        remembered_installations(&self.pool).await
    }

    /// Stores node ids learnt for known repositories (see [`record_node_ids`]).
    pub async fn record_node_ids(
        &self,
        node_ids: &[(RepoId, String)],
    ) -> Result<(), RegistryError> {
        record_node_ids(&self.pool, node_ids).await
    }

    /// Records whether each repository is public, as the listing read it
    /// (see [`record_visibility`]).
    pub async fn record_visibility(&self, seen: &[(RepoId, bool)]) -> Result<(), RegistryError> {
        record_visibility(&self.pool, seen).await
    }

    /// `owner/name` of a known repository.
    pub async fn full_name(&self, id: RepoId) -> Result<Option<String>, RegistryError> {
        super::repos::full_name(&self.pool, id).await
    }
}
