//! The read side's queries on entries: the list, a page at a time and
//! within the byte bound of an answer, one entry, one repository's.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::cursor::{self, page_size, DEFAULT_LIMIT};
use crate::db::Page;
use crate::project::{Fields, ResolvedOwner};
use crate::registry::entry::Entry;
use crate::registry::{budget, RegistryError};
use crate::source::RepoId;

/// Which entries to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFilter {
    /// Exact owner (the team) of the entry.
    pub owner: Option<String>,
    /// Entries carrying this tag.
    pub tag: Option<String>,
    /// Case-insensitive substring of the name or the description.
    pub q: Option<String>,
    /// Clamped to `1..=MAX_LIMIT`.
    pub limit: u32,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl Default for ProjectFilter {
    fn default() -> Self {
        Self {
            owner: None,
            tag: None,
            q: None,
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

crate::row! {
    pub(in crate::registry) struct EntryRow {
        name: String,
        fields: Fields as flatten,
        resolved: ResolvedOwner as flatten,
        repo_owner: String,
        repo_name: String,
        repo_id: RepoId,
        path: String,
        source_sha: String,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

impl From<EntryRow> for Entry {
    fn from(row: EntryRow) -> Self {
        Entry {
            name: row.name,
            fields: row.fields,
            resolved: row.resolved,
            repo: format!("{}/{}", row.repo_owner, row.repo_name),
            repo_id: row.repo_id,
            path: row.path,
            source_sha: row.source_sha,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// Every column of the entry (the table's fields among them) and its
/// repository's name.
pub(in crate::registry) const ENTRY_SELECT: &str =
    "select e.*, r.owner as repo_owner, r.name as repo_name
     from entries e join repositories r on r.id = e.repo_id";

/// One repository's entries, sorted by name, on the caller's connection
/// (inside a reconcile's transaction, for the change log).
pub(crate) async fn entries_of(
    conn: &mut sqlx::PgConnection,
    id: RepoId,
) -> Result<Vec<Entry>, sqlx::Error> {
    let rows: Vec<EntryRow> = sqlx::query_as(&format!(
        "{ENTRY_SELECT} where e.repo_id = $1 order by e.name"
    ))
    .bind(id)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(Entry::from).collect())
}

crate::row! {
    /// An entry of a page, with how many entries matched before the byte
    /// bound cut the page.
    struct PagedEntryRow {
        entry: EntryRow as flatten,
        matched: i64,
    }
}

/// About the bytes of an entry `e` as JSON, from its stored columns: what
/// a page is cut by before it is read (then measured exactly).
const ENTRY_BYTES: &str = "256 + octet_length(to_jsonb(e)::text)";

/// Lists entries ordered by name, one page at a time: at most `limit`, and
/// at most the byte bound of an answer (at least one entry).
pub async fn list_projects(
    pool: &PgPool,
    filter: &ProjectFilter,
) -> Result<Page<Entry>, RegistryError> {
    let after: Option<(String,)> = filter.cursor.as_deref().map(cursor::decode).transpose()?;
    let size = page_size(filter.limit);
    let rows: Vec<PagedEntryRow> = sqlx::query_as(&format!(
        "with matched as (
             select e.name, {ENTRY_BYTES} as bytes from entries e
             where ($1::text is null or e.owner = $1)
               and ($2::text is null or $2 = any(e.tags))
               and ($3::text is null or strpos(lower(e.name), lower($3)) > 0
                    or strpos(lower(coalesce(e.description, '')), lower($3)) > 0)
               and ($4::text is null or e.name > $4)
             order by e.name
             limit $5 + 1),
         running as (
             select name, row_number() over w as n, sum(bytes) over w as used
             from matched window w as (order by name)),
         page as (select name from running where n <= $5 and (n = 1 or used <= $6))
         select x.*, m.matched
         from ({ENTRY_SELECT} where e.name in (select name from page)) x
         cross join (select count(*) as matched from matched) m
         order by x.name"
    ))
    .bind(filter.owner.as_deref().filter(|s| !s.is_empty()))
    .bind(filter.tag.as_deref().filter(|s| !s.is_empty()))
    .bind(filter.q.as_deref().filter(|s| !s.is_empty()))
    .bind(after.map(|(name,)| name))
    .bind(size)
    .bind(i64::try_from(budget::ITEMS_BUDGET).unwrap_or(i64::MAX))
    .fetch_all(pool)
    .await?;
    let matched = rows.first().map_or(0, |r| r.matched);
    let mut items: Vec<Entry> = rows.into_iter().map(|r| Entry::from(r.entry)).collect();
    // An entry is shown in the form it is stored in (`Entry`'s), so this
    // measures the answer.
    let cut = budget::fit_json(&mut items);
    let more = cut || usize::try_from(matched).unwrap_or(0) > items.len();
    let next_cursor = items
        .last()
        .filter(|_| more)
        .map(|entry| project_cursor(&entry.name));
    Ok(Page { items, next_cursor })
}

/// The cursor of the page of entries after `name`.
pub fn project_cursor(name: &str) -> String {
    cursor::encode(&(name,))
}

/// One entry by its name.
pub async fn get_project(pool: &PgPool, name: &str) -> Result<Option<Entry>, RegistryError> {
    let row: Option<EntryRow> = sqlx::query_as(&format!("{ENTRY_SELECT} where e.name = $1"))
        .bind(name)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(Entry::from))
}
