//! The read side, shared by the API and the dashboard so they never disagree:
//! the counts; the reads on repositories are [`super::repo_query`]'s,
//! those on entries [`super::entry_query`]'s, the page bounds
//! [`super::cursor`]'s.

use std::collections::BTreeMap;

use sqlx::PgPool;

use crate::registry::{RegistryError, Status};

/// One repository's entries, for the change log (read inside a reconcile).
pub(crate) use super::entry_query::entries_of;

/// How many repositories have each status, every status present (zeros too).
pub async fn status_counts(pool: &PgPool) -> Result<BTreeMap<String, i64>, RegistryError> {
    let mut counts: BTreeMap<String, i64> = Status::ALL
        .iter()
        .map(|s| (s.as_str().to_string(), 0))
        .collect();
    let rows: Vec<(String, i64)> =
        sqlx::query_as("select status, count(*) from repositories group by status")
            .fetch_all(pool)
            .await?;
    for (status, count) in rows {
        counts.insert(status, count);
    }
    Ok(counts)
}

pub use crate::db::queue::{ListingTimes, QueueSummary};

/// Counts the queue's ids by what they wait for (the queue's own reading,
/// with the registry's error).
pub async fn queue_summary(pool: &PgPool) -> Result<QueueSummary, RegistryError> {
    Ok(crate::db::queue::summary(pool).await?)
}

/// When the periodic org-wide listing last ran (the queue's own reading,
/// with the registry's error).
pub async fn listing_times(pool: &PgPool) -> Result<ListingTimes, RegistryError> {
    Ok(crate::db::queue::listing_times(pool).await?)
}

pub use super::repo_page::{repo_source_info, ConflictOwner, RepoSourceInfo};
