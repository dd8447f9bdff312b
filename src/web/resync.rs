//! The resync actions (docs/contract.md#http-routes): request a listing, enqueue one repository.
//! Both only enqueue; the workers do the work. Shared by the write API and
//! the dashboard's forms, which differ only in how they answer.

use super::error::{repo_not_found, ApiError};
use super::state::AppState;
use crate::controller::{Enqueue, ListingSchedule, Trigger, WorkQueue};
use crate::registry;
use crate::source::RepoId;

/// Schedules an org-wide listing as soon as possible, on whichever replica
/// takes it. Shared by the API and the dashboard's "Resync all"; `via` says
/// which in the log.
pub async fn schedule_listing(state: &AppState, via: &str) -> Result<(), ApiError> {
    state
        .queue
        .request_listing()
        .await
        .map_err(|error| ApiError::unavailable("resync: cannot request a listing", &error))?;
    tracing::info!("resync: org-wide listing requested {via}");
    Ok(())
}

/// Enqueues one repository as a fresh trigger (any prefetched file is
/// ignored). Shared by the API and the dashboard's "Resync"; 404 when the
/// registry does not know the repository.
pub async fn enqueue_repo(
    state: &AppState,
    owner: &str,
    name: &str,
    via: &str,
) -> Result<RepoId, ApiError> {
    let id = registry::repo_id_by_full_name(&state.pool, owner, name)
        .await?
        .ok_or_else(|| repo_not_found(owner, name))?;
    state
        .queue
        .enqueue(vec![Enqueue::because(id, Trigger::Resync)])
        .await
        .map_err(|error| ApiError::unavailable("resync: cannot enqueue", &error))?;
    tracing::info!(repo = %id, "resync: {owner}/{name} enqueued {via}");
    Ok(id)
}
