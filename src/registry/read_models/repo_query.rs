//! The read side's queries on repositories: the list, a page at a time,
//! and one repository with its entries and newest events.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::cursor::{self, page_size, DEFAULT_LIMIT};
use super::entry_query::{EntryRow, ENTRY_SELECT};
use super::repo_rows::{Hold, Repo, RepoDetail, RepoEvent};
use crate::db::Page;
use crate::project::relations::RelationsMode;
use crate::registry::entry::Entry;
use crate::registry::{RegistryError, Status};
use crate::source::RepoId;

/// Events shown with a repository, newest first: at most 50 (docs/contract.md#bounds).
const DETAIL_EVENTS: i64 = 50;

/// Which repositories to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFilter {
    pub status: Option<Status>,
    /// Case-insensitive substring of `owner/name`.
    pub q: Option<String>,
    /// Clamped to `1..=MAX_LIMIT`.
    pub limit: u32,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// How dependencies are checked (`ROSTER_RELATIONS`): under `off` an
    /// unknown one is no warning.
    pub relations: RelationsMode,
}

impl Default for RepoFilter {
    fn default() -> Self {
        Self {
            status: None,
            q: None,
            limit: DEFAULT_LIMIT,
            cursor: None,
            relations: RelationsMode::default(),
        }
    }
}

crate::row! {
    struct RepoRow {
        id: RepoId,
        owner: String,
        name: String,
        status: Status,
        synced_sha: Option<String>,
        last_synced_at: Option<DateTime<Utc>>,
        error: Option<String>,
        attempts: i32,
        projects: Vec<String>,
        warnings: i64,
        /// The active hold on its removal, if any (all three or none).
        hold_id: Option<i64>,
        hold_since: Option<DateTime<Utc>>,
        hold_reason: Option<String>,
    }
}

impl RepoRow {
    fn into_repo(self) -> Repo {
        Repo {
            id: self.id,
            full_name: format!("{}/{}", self.owner, self.name),
            status: self.status,
            synced_sha: self.synced_sha,
            last_synced_at: self.last_synced_at,
            error: self.error,
            attempts: self.attempts,
            projects: self.projects,
            warnings: self.warnings,
            hold: match (self.hold_id, self.hold_since, self.hold_reason) {
                (Some(id), Some(since), Some(reason)) => Some(Hold { id, since, reason }),
                _ => None,
            },
        }
    }
}

/// The columns of [`RepoRow`], `error` given by `error`: the whole of it
/// ([`WHOLE_ERROR`]) or its first line ([`FIRST_LINE_OF_ERROR`]). The
/// warnings are counted afterwards, for all the rows at once
/// ([`warnings_of`]).
fn repo_columns(error: &str) -> String {
    format!(
        "r.id, r.owner, r.name, r.status, r.synced_sha, r.last_synced_at,
         {error} as error, r.attempts,
         array(select e.name from entries e where e.repo_id = r.id order by e.name) as projects,
         0::bigint as warnings,
         h.id as hold_id, h.since as hold_since, h.reason as hold_reason"
    )
}

/// Counts the flagged entries of each of `rows` into its `warnings`: an
/// owner of [`FLAGGED_OWNERS`], or (unless `relations` is `off`) a
/// dependency on a name no entry has. One statement for the page: the
/// page's dependencies are matched with the entries in one anti-join (a
/// hash join on a large registry), where a subquery per repository looked
/// up each dependency of each entry on its own, seconds for a page of
/// projects with 50 dependencies each.
async fn count_warnings(
    pool: &PgPool,
    rows: &mut [RepoRow],
    relations: RelationsMode,
) -> Result<(), RegistryError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = rows.iter().map(|r| r.id.0).collect();
    let counted: Vec<(i64, i64)> = sqlx::query_as(&format!(
        "select e.repo_id, count(*) from entries e
         where e.repo_id = any($1)
           and (e.owner_status in ({FLAGGED_OWNERS})
                or ($2 and e.name in ({UNKNOWN_DEPENDENCY})))
         group by e.repo_id"
    ))
    .bind(&ids)
    .bind(relations != RelationsMode::Off)
    .fetch_all(pool)
    .await?;
    let counted: std::collections::HashMap<i64, i64> = counted.into_iter().collect();
    for row in rows {
        row.warnings = counted.get(&row.id.0).copied().unwrap_or(0);
    }
    Ok(())
}

/// The owner statuses that flag an entry: an owner that names nobody, a
/// team by an old slug, a deleted team (what `/owners` lists first).
const FLAGGED_OWNERS: &str = "'unknown', 'renamed', 'deleted'";

/// The entries of the repositories `$1` that depend on a name no entry
/// has: resolved by name when read, so one stops counting as soon as its
/// target is applied.
const UNKNOWN_DEPENDENCY: &str =
    "select u.name from entries u cross join lateral unnest(u.depends_on) as d(name)
     where u.repo_id = any($1)
       and not exists (select 1 from entries t where t.name = d.name)";

/// What the detail route shows.
const WHOLE_ERROR: &str = "r.error";

/// What lists show: what is wrong at a glance, in a bounded answer; the
/// detail route has the rest (docs/contract.md#bounds).
const FIRST_LINE_OF_ERROR: &str = "split_part(r.error, E'\\n', 1)";

/// Joins the active hold of each repository `r` as `h` (after `from repositories r`).
const HOLD_JOIN: &str = "left join holds h
     on h.id = r.hold_id and h.released_at is null and h.cleared_at is null";

/// Lists repositories ordered by `(owner, name, id)`, one page at a time.
pub async fn list_repos(pool: &PgPool, filter: &RepoFilter) -> Result<Page<Repo>, RegistryError> {
    let after: Option<(String, String, i64)> =
        filter.cursor.as_deref().map(cursor::decode).transpose()?;
    let (after_owner, after_name, after_id) = match after {
        Some((owner, name, id)) => (Some(owner), Some(name), Some(id)),
        None => (None, None, None),
    };
    let size = page_size(filter.limit);
    let columns = repo_columns(FIRST_LINE_OF_ERROR);
    let mut rows: Vec<RepoRow> = sqlx::query_as(&format!(
        "select {columns} from repositories r {HOLD_JOIN}
         where ($1::text is null or r.status = $1)
           and ($2::text is null or strpos(lower(r.owner || '/' || r.name), lower($2)) > 0)
           and ($3::text is null or (r.owner, r.name, r.id) > ($3::text, $4::text, $5::bigint))
         order by r.owner, r.name, r.id
         limit $6"
    ))
    .bind(filter.status.map(Status::as_str))
    .bind(filter.q.as_deref().filter(|q| !q.is_empty()))
    .bind(after_owner)
    .bind(after_name)
    .bind(after_id)
    .bind(size + 1)
    .fetch_all(pool)
    .await?;
    count_warnings(pool, &mut rows, filter.relations).await?;
    let items = rows.into_iter().map(RepoRow::into_repo).collect();
    Ok(paginate(items, size, |repo| {
        let (owner, name) = repo
            .full_name
            .split_once('/')
            .unwrap_or((&repo.full_name, ""));
        cursor::encode(&(owner, name, repo.id.0))
    }))
}

/// The id of the repository called `owner/name` now (case-insensitive, as
/// on GitHub). When a rename left two rows with one name, the newest wins.
pub async fn repo_id_by_full_name(
    pool: &PgPool,
    owner: &str,
    name: &str,
) -> Result<Option<RepoId>, RegistryError> {
    Ok(sqlx::query_scalar(
        "select id from repositories
         where lower(owner) = lower($1) and lower(name) = lower($2)
         order by status = 'removed', updated_at desc, id desc
         limit 1",
    )
    .bind(owner)
    .bind(name)
    .fetch_optional(pool)
    .await?)
}

/// One repository with its entries and its newest events, its warnings
/// counted under the default `ROSTER_RELATIONS` ([`get_repo_under`]).
pub async fn get_repo(
    pool: &PgPool,
    owner: &str,
    name: &str,
) -> Result<Option<RepoDetail>, RegistryError> {
    get_repo_under(pool, owner, name, RelationsMode::default()).await
}

/// [`get_repo`], an unknown dependency counted as a warning unless
/// `relations` is `off`.
pub async fn get_repo_under(
    pool: &PgPool,
    owner: &str,
    name: &str,
    relations: RelationsMode,
) -> Result<Option<RepoDetail>, RegistryError> {
    let Some(id) = repo_id_by_full_name(pool, owner, name).await? else {
        return Ok(None);
    };
    let columns = repo_columns(WHOLE_ERROR);
    let Some(mut row) = sqlx::query_as::<_, RepoRow>(&format!(
        "select {columns} from repositories r {HOLD_JOIN} where r.id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?
    else {
        return Ok(None);
    };
    count_warnings(pool, std::slice::from_mut(&mut row), relations).await?;
    let events: Vec<RepoEvent> = sqlx::query_as(
        "select at, kind, message, count from events where repo_id = $1
         order by id desc limit $2",
    )
    .bind(id)
    .bind(DETAIL_EVENTS)
    .fetch_all(pool)
    .await?;
    let entries: Vec<EntryRow> = sqlx::query_as(&format!(
        "{ENTRY_SELECT} where e.repo_id = $1 order by e.name"
    ))
    .bind(id)
    .fetch_all(pool)
    .await?;
    Ok(Some(RepoDetail {
        repo: row.into_repo(),
        events,
        entries: entries.into_iter().map(Entry::from).collect(),
    }))
}

/// Keeps `size` items and, when there were more, the cursor after the last.
fn paginate<T>(mut items: Vec<T>, size: i64, key: impl Fn(&T) -> String) -> Page<T> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let more = items.len() > size;
    items.truncate(size);
    let next_cursor = if more { items.last().map(key) } else { None };
    Page { items, next_cursor }
}
