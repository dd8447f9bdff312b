//! `GET /api/v1/owners`: the organisations' teams (and, for the API token
//! or a signed-in session, their members and secret teams), each with the
//! number of entries whose `owner` names it, resolved through the
//! directory (an old slug counts for the team it now names).
//!
//! Teams and members are the organisation's private data: without
//! credentials only visible teams' slug, name and entry count are shown. A
//! page holds at most `limit` owners and about 1 MiB; `next_cursor` pages on.

use std::collections::HashMap;

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, BadParameter};
use super::extract::ApiQuery;
use super::params::parse_limit;
use super::privacy::{Privacy, Privileged};
use super::state::AppState;
use crate::directory::db::AccountStatus;
use crate::directory::resolve::Resolver;
use crate::directory::{DirectoryDb, Resolution};
use crate::registry::read_models::cursor;
use crate::registry::read_models::owner_counts::owner_counts;

/// A page stops growing past this many bytes of owners.
pub const MAX_PAGE_BYTES: usize = 1024 * 1024 - 64 * 1024;

/// `?limit=&cursor=&status=`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OwnerParams {
    /// At most this many owners (1 to 1000, default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `unknown`, `renamed` or `deleted`: list the owners, as the files
    /// write them, that resolve so, instead of the teams and members.
    #[param(value_type = Option<DanglingStatus>, inline)]
    pub status: Option<String>,
}

/// An owner as the files write it that names nobody current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DanglingJson {
    /// The organisation's login.
    pub account: String,
    /// The owner as written.
    pub owner: String,
    /// `unknown`, `renamed` or `deleted`.
    pub status: &'static str,
    /// A renamed team's slug now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// An unknown owner's nearest visible slugs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
    /// Entries that name it.
    pub entries: i64,
}

// The values of `DANGLING`, for the OpenAPI document.
/// How an owner as the files write it names nobody current.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum DanglingStatus {
    Unknown,
    Renamed,
    Deleted,
}

// It has no `accounts`, and its schema says so (no other property), so
// that it and `OwnersPage` are told apart: an empty page matches one only.
/// A page of dangling owners.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DanglingPage {
    pub items: Vec<DanglingJson>,
    pub next_cursor: Option<String>,
}

/// The statuses `?status=` takes.
const DANGLING: [&str; 3] = ["unknown", "renamed", "deleted"];

/// One team or member, with its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct OwnerJson {
    /// The organisation's login.
    pub account: String,
    /// `team` or `member`.
    pub kind: &'static str,
    /// A team's slug or a member's login.
    pub name: String,
    /// A team's display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<i64>,
    pub secret: bool,
    /// The team is gone from the organisation; entries still name it.
    pub deleted: bool,
    /// Entries whose `owner` resolves to it.
    pub entries: i64,
}

/// A page of owners, and how each organisation's directory stands.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OwnersPage {
    pub accounts: Vec<AccountJson>,
    pub items: Vec<OwnerJson>,
    pub next_cursor: Option<String>,
}

/// An organisation: whether its owners are checked, and its last read.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AccountJson {
    pub login: String,
    pub personal: bool,
    pub owners_checked: bool,
    /// Why owners are not checked (GitHub refused the teams).
    pub off_reason: Option<String>,
    /// The last read that failed, or a `teams.yaml` that was refused.
    pub read_error: Option<String>,
    pub teams_read_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<AccountStatus> for AccountJson {
    fn from(a: AccountStatus) -> Self {
        Self {
            owners_checked: !a.personal && a.off_reason.is_none(),
            login: a.login,
            personal: a.personal,
            off_reason: a.off_reason,
            read_error: a.read_error,
            teams_read_at: a.teams_read_at,
        }
    }
}

/// The sort key of an owner, which the cursor carries.
type Key = (String, u8, String, i64);

fn key_of(owner: &OwnerJson) -> Key {
    (
        owner.account.to_lowercase(),
        u8::from(owner.kind == "member"),
        owner.name.to_lowercase(),
        owner.id,
    )
}

/// What `/api/v1/owners` answers: the teams and members, or with
/// `?status=` the owners that name nobody current.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum OwnersAnswer {
    Owners(OwnersPage),
    Dangling(DanglingPage),
}

/// The teams and members, or with `?status=` the owners that name nobody
/// current.
#[utoipa::path(get, path = "/api/v1/owners", operation_id = "list_owners",
    tag = "registry", params(OwnerParams), security((), ("token" = [])),
    responses((status = 200, description = "A page of owners", body = OwnersAnswer),
              BadParameter))]
pub async fn list(
    privileged: Privileged,
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<OwnerParams>,
) -> Result<Json<OwnersAnswer>, ApiError> {
    match params.status.as_deref().filter(|s| !s.is_empty()) {
        Some(status) => {
            let Some(status) = DANGLING.iter().find(|d| **d == status) else {
                return Err(ApiError::BadRequest(format!(
                    "status: must be one of unknown, renamed, deleted, found {status:?}"
                )));
            };
            let privacy = match privileged {
                Privileged(true) => Privacy::everything(),
                Privileged(false) => Privacy::public(&state.pool).await?,
            };
            Ok(Json(OwnersAnswer::Dangling(
                dangling(&state, status, &params, &privacy).await?,
            )))
        }
        None => Ok(Json(OwnersAnswer::Owners(
            teams_and_members(privileged, &state, &params).await?,
        ))),
    }
}

/// Owners as the files write them that resolve to `status`, by account
/// and owner; paged like the teams.
async fn dangling(
    state: &AppState,
    status: &'static str,
    params: &OwnerParams,
    privacy: &Privacy,
) -> Result<DanglingPage, ApiError> {
    let (limit, after): (usize, Option<(String, String)>) = paging(params)?;
    let unavailable = |e: sqlx::Error| ApiError::unavailable("owners: directory query failed", &e);
    let db = DirectoryDb::new(state.pool.clone());
    let accounts = db.accounts().await.map_err(unavailable)?;
    let counts = owner_counts(&state.pool).await?;
    let mut found = Vec::new();
    for account in &accounts {
        let Some(dir) = db.load(account.org_id).await.map_err(unavailable)? else {
            continue;
        };
        let resolver = Resolver::new(&dir);
        let names_account = |login: &str| {
            login.eq_ignore_ascii_case(&dir.login)
                || dir.former_logins.contains(&login.to_lowercase())
        };
        for count in counts.iter().filter(|c| names_account(&c.account)) {
            let resolution = resolver.resolve(&count.owner);
            if resolution.status() != status || privacy.hides_resolution(&resolution) {
                continue;
            }
            let (renamed_to, suggestions) = match resolution {
                Resolution::Renamed { to, .. } => (Some(to), Vec::new()),
                Resolution::Unknown { suggestions } => (None, suggestions),
                _ => (None, Vec::new()),
            };
            found.push(DanglingJson {
                account: dir.login.clone(),
                owner: count.owner.clone(),
                status,
                renamed_to,
                suggestions,
                entries: count.entries,
            });
        }
    }
    let key = |d: &DanglingJson| (d.account.to_lowercase(), d.owner.clone());
    found.sort_by_cached_key(key);
    let mut items: Vec<DanglingJson> = found
        .into_iter()
        .filter(|d| after.as_ref().is_none_or(|a| key(d) > *a))
        .collect();
    let more = items.len() > limit;
    items.truncate(limit);
    let cut = crate::registry::budget::fit_json(&mut items);
    let next_cursor = (more || cut)
        .then(|| items.last().map(|d| cursor::encode(&key(d))))
        .flatten();
    Ok(DanglingPage { items, next_cursor })
}

/// `?limit=` and the key `?cursor=` goes on from.
fn paging<K: serde::de::DeserializeOwned>(
    params: &OwnerParams,
) -> Result<(usize, Option<K>), ApiError> {
    let limit = parse_limit(params.limit.as_deref().filter(|l| !l.is_empty()))? as usize;
    let after = params
        .cursor
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(cursor::decode)
        .transpose()?;
    Ok((limit, after))
}

async fn teams_and_members(
    Privileged(privileged): Privileged,
    state: &AppState,
    params: &OwnerParams,
) -> Result<OwnersPage, ApiError> {
    let (limit, after): (usize, Option<Key>) = paging(params)?;
    let unavailable = |e: sqlx::Error| ApiError::unavailable("owners: directory query failed", &e);
    let db = DirectoryDb::new(state.pool.clone());
    let accounts = db.accounts().await.map_err(unavailable)?;
    let counts = owner_counts(&state.pool).await?;
    let mut owners = Vec::new();
    for account in &accounts {
        let Some(dir) = db.load(account.org_id).await.map_err(unavailable)? else {
            continue;
        };
        let resolver = Resolver::new(&dir);
        let mut by_team: HashMap<i64, i64> = HashMap::new();
        let mut by_member: HashMap<String, i64> = HashMap::new();
        let names_account = |login: &str| {
            login.eq_ignore_ascii_case(&dir.login)
                || dir.former_logins.contains(&login.to_lowercase())
        };
        for count in counts.iter().filter(|c| names_account(&c.account)) {
            match resolver.resolve(&count.owner) {
                Resolution::Member { login } => {
                    *by_member.entry(login.to_lowercase()).or_default() += count.entries
                }
                other => {
                    if let Some(id) = other.team_id() {
                        *by_team.entry(id).or_default() += count.entries;
                    }
                }
            }
        }
        for known in dir.teams.iter().filter(|t| privileged || !t.team.secret) {
            let team = &known.team;
            owners.push(OwnerJson {
                account: dir.login.clone(),
                kind: "team",
                name: team.slug.clone(),
                title: Some(team.name.clone()),
                id: team.id,
                parent_id: team.parent_id,
                secret: team.secret,
                deleted: known.deleted,
                entries: by_team.get(&team.id).copied().unwrap_or(0),
            });
        }
        if privileged {
            for member in &dir.members {
                owners.push(OwnerJson {
                    account: dir.login.clone(),
                    kind: "member",
                    name: member.login.clone(),
                    title: None,
                    id: member.id,
                    parent_id: None,
                    secret: false,
                    deleted: false,
                    entries: by_member
                        .get(&member.login.to_lowercase())
                        .copied()
                        .unwrap_or(0),
                });
            }
        }
    }
    owners.sort_by_cached_key(key_of);
    let (items, next_cursor) = page(owners, after.as_ref(), limit);
    Ok(OwnersPage {
        accounts: accounts.into_iter().map(AccountJson::from).collect(),
        items,
        next_cursor,
    })
}

/// The owners after `after`, at most `limit` and about [`MAX_PAGE_BYTES`].
fn page(
    owners: Vec<OwnerJson>,
    after: Option<&Key>,
    limit: usize,
) -> (Vec<OwnerJson>, Option<String>) {
    let mut items = Vec::new();
    let mut bytes = 0;
    let mut rest = owners
        .into_iter()
        .filter(|o| after.is_none_or(|a| key_of(o) > *a))
        .peekable();
    while let Some(owner) = rest.peek() {
        let size = serde_json::to_vec(owner).map_or(0, |b| b.len()) + 1;
        if items.len() == limit || (bytes + size > MAX_PAGE_BYTES && !items.is_empty()) {
            break;
        }
        bytes += size;
        if let Some(owner) = rest.next() {
            items.push(owner);
        }
    }
    let next = match (rest.peek(), items.last()) {
        (Some(_), Some(last)) => Some(cursor::encode(&key_of(last))),
        _ => None,
    };
    (items, next)
}
