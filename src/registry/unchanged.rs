//! Reads that change nothing but times, and first reads of repositories
//! without a project file: most reads of an organisation are one or the
//! other (most repositories have no project file, and most files are as
//! they were), and the long way takes a transaction of a dozen statements
//! for each. Here each is one statement for a whole batch (a listing hands
//! workers a hundred repositories at a time), or for one repository read
//! alone, which writes exactly what the long way would, and nothing unless
//! every condition holds:
//! - no file again: the row `no_file` at that commit under the same
//!   settings and names, no entry, its newest event the one the long way
//!   would record again: the times move, the event is counted;
//! - no file, first sight: the row just made known (`pending`, never
//!   reconciled, no entry, no event, no hold) or not known at all: the row
//!   and its first event are written;
//! - a file again: `synced` at the same commit with the same blob, under
//!   the same settings and names, and under the name the change log last
//!   recorded (a rename learnt since is logged the long way): its entries
//!   are what that blob made them (an owner's team that changes meanwhile
//!   is followed by `owner_follow`), so only the times move and the
//!   `unchanged` event is counted, or added as `events::record` adds one.
//!
//! A claim, when there is one, is checked, not locked: locking the queue's
//! row before the repository's would take the two in the order opposite
//! to the intake's and the long way's, and could deadlock with them.
//! Unlocked, the claim may lapse between the check and the commit; what is
//! written then is still true, since the row matched the state this read
//! observed. A repository that does not qualify is left to the caller,
//! which reconciles it the long way.

use std::collections::{HashMap, HashSet};

use sqlx::PgPool;

use super::events::KEPT;
use super::outcome::unchanged_message;
use super::repos::Observation;
use super::settled_pushes::blob_id;
use super::Status;
use crate::controller::{AppliedTogether, Claim, Failure};
use crate::source::{FileState, Observed, RepoId, RepoInfo};
use statements::{FILE_AGAIN, NO_FILE_AGAIN, NO_FILE_FIRST};

mod statements;

/// One row of a batch statement's input.
struct Row<'a> {
    id: RepoId,
    /// The claim's token, when the write must wait for a live claim.
    token: Option<&'a str>,
    /// Whether `observed_at` moves ([`Observation::Fresh`]).
    fresh: bool,
    repo: &'a RepoInfo,
    sha: Option<&'a str>,
    blob: Option<String>,
}

impl<'a> Row<'a> {
    /// The row of `observed` when one of these statements may apply it:
    /// no file, or (with `files`) a file.
    fn of(
        id: RepoId,
        claim: Option<&'a Claim<RepoId>>,
        observed: &'a Observed,
        files: bool,
    ) -> Option<(Self, bool)> {
        let Observed::Present { repo, file } = observed else {
            return None;
        };
        let (sha, blob) = match file {
            FileState::Absent { sha } => (sha.as_deref(), None),
            FileState::Found { sha, bytes } if files => (Some(sha.as_str()), Some(blob_id(bytes))),
            _ => return None,
        };
        let found = blob.is_some();
        let row = Self {
            id,
            token: claim.map(|c| c.token.as_str()),
            fresh: Observation::of(claim) == Observation::Fresh,
            repo,
            sha,
            blob,
        };
        Some((row, found))
    }
}

/// The batch's input as arrays, in id order (the order writers lock rows
/// in).
fn arrays(rows: &mut [Row<'_>]) -> sqlx::postgres::PgArguments {
    rows.sort_by_key(|r| r.id);
    let mut args = sqlx::postgres::PgArguments::default();
    add(&mut args, rows.iter().map(|r| r.id.0).collect::<Vec<i64>>());
    add(
        &mut args,
        rows.iter().map(|r| r.token).collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter().map(|r| r.sha).collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.owner.as_str())
            .collect::<Vec<&str>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.name.as_str())
            .collect::<Vec<&str>>(),
    );
    let installations: Vec<Option<i64>> = rows
        .iter()
        .map(|r| r.repo.installation_id.map(|i| i.0))
        .collect();
    add(&mut args, installations);
    let branches: Vec<&str> = rows
        .iter()
        .map(|r| r.repo.default_branch.as_str())
        .collect();
    add(&mut args, branches);
    add(
        &mut args,
        rows.iter()
            .map(|r| r.repo.html_url.as_deref())
            .collect::<Vec<Option<&str>>>(),
    );
    add(
        &mut args,
        rows.iter().map(|r| r.fresh).collect::<Vec<bool>>(),
    );
    add(
        &mut args,
        rows.iter()
            .map(|r| r.blob.as_deref())
            .collect::<Vec<Option<&str>>>(),
    );
    args
}

/// What the statements record besides each row: the settings' fingerprint,
/// the message of a reconcile finding no file, and whether files may be
/// settled (no `require` setting: a file's validity then changes only with
/// its blob).
#[derive(Clone, Copy)]
pub(super) struct Recorded<'a> {
    pub fingerprint: &'a str,
    pub no_file: &'a str,
    pub files: bool,
}

/// Applies together what of a batch qualifies (see the module): for each
/// claim, its outcome when it was applied here. A statement that fails
/// leaves its rows to the caller, and says why in the log.
pub(super) async fn apply(
    pool: &PgPool,
    claims: &[Claim<RepoId>],
    states: &[Result<Observed, Failure>],
    recorded: Recorded<'_>,
) -> Vec<Option<AppliedTogether>> {
    let mut outcomes = vec![None; claims.len()];
    let rows = claims.iter().zip(states).filter_map(|(claim, state)| {
        let observed = state.as_ref().ok()?;
        Row::of(claim.key, Some(claim), observed, recorded.files)
    });
    let applied: HashMap<RepoId, &'static str> = match write(pool, rows, recorded).await {
        Ok(applied) => applied.into_iter().collect(),
        Err(error) => {
            tracing::info!(%error, rows = claims.len(), "a batch's reads could not be applied together; applying them one by one");
            return outcomes;
        }
    };
    for ((slot, claim), state) in outcomes.iter_mut().zip(claims).zip(states) {
        if let Some(outcome) = applied.get(&claim.key) {
            let name = match state {
                Ok(Observed::Present { repo, .. }) => Some(repo.full_name()),
                _ => None,
            };
            *slot = Some(AppliedTogether { outcome, name });
        }
    }
    outcomes
}

/// [`apply`] for one repository read outside a batch; `None` when it must
/// be reconciled the long way.
pub(super) async fn apply_one(
    pool: &PgPool,
    id: RepoId,
    claim: Option<&Claim<RepoId>>,
    observed: &Observed,
    recorded: Recorded<'_>,
) -> Result<Option<&'static str>, sqlx::Error> {
    let row = Row::of(id, claim, observed, recorded.files);
    let applied = write(pool, row.into_iter(), recorded).await?;
    Ok(applied.first().map(|(_, outcome)| *outcome))
}

/// The statements on `rows`: no file again, then no file at first sight
/// for what is left, then files again.
async fn write<'a>(
    pool: &PgPool,
    rows: impl Iterator<Item = (Row<'a>, bool)>,
    recorded: Recorded<'_>,
) -> Result<Vec<(RepoId, &'static str)>, sqlx::Error> {
    let (found, mut absent): (Vec<_>, Vec<_>) = rows.partition(|(_, found)| *found);
    let mut found: Vec<Row<'a>> = found.into_iter().map(|(row, _)| row).collect();
    let mut absent: Vec<Row<'a>> = absent.drain(..).map(|(row, _)| row).collect();
    let mut applied = Vec::new();
    if !absent.is_empty() {
        let status = Status::NoFile.as_str();
        let shared = |args: &mut sqlx::postgres::PgArguments| {
            add(args, status);
            add(args, recorded.fingerprint);
            add(args, recorded.no_file);
        };
        let again = run(pool, &NO_FILE_AGAIN, &mut absent, shared).await?;
        absent.retain(|r| !again.contains(&r.id));
        applied.extend(again.into_iter().map(|id| (id, status)));
        if !absent.is_empty() {
            let first = run(pool, &NO_FILE_FIRST, &mut absent, shared).await?;
            applied.extend(first.into_iter().map(|id| (id, status)));
        }
    }
    if !found.is_empty() {
        let status = Status::Synced.as_str();
        // In the input's order (by id), as `run` sorts it.
        found.sort_by_key(|r| r.id);
        let messages: Vec<String> = found
            .iter()
            .map(|r| unchanged_message(r.sha.unwrap_or_default()))
            .collect();
        let settled = run(pool, &FILE_AGAIN, &mut found, |args| {
            add(args, status);
            add(args, recorded.fingerprint);
            add(args, &messages);
            add(args, KEPT - 1);
        })
        .await?;
        applied.extend(settled.into_iter().map(|id| (id, status)));
    }
    Ok(applied)
}

fn add<'q, T>(args: &mut sqlx::postgres::PgArguments, value: T)
where
    T: sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres> + 'q,
{
    use sqlx::Arguments;
    // Encoding plain values and arrays of them cannot fail; were it to,
    // the statement fails, and its rows are reconciled the long way.
    let _ = args.add(value);
}

/// Runs `sql` on `rows` with the parameters `more` adds after the input's;
/// the ids it applied.
async fn run(
    pool: &PgPool,
    sql: &str,
    rows: &mut [Row<'_>],
    more: impl FnOnce(&mut sqlx::postgres::PgArguments),
) -> Result<HashSet<RepoId>, sqlx::Error> {
    let mut args = arrays(rows);
    more(&mut args);
    let ids = sqlx::query_scalar_with::<_, i64, _>(sql, args)
        .fetch_all(pool)
        .await?;
    Ok(ids.into_iter().map(RepoId).collect())
}

#[cfg(test)]
mod tests;
