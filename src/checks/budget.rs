//! What checks may spend of an installation's GitHub budget, so that a
//! flood of pull requests delays checks and never the sync:
//! - per resource (REST and GraphQL each), checks send nothing while what
//!   is left is at or below the larger of half the window's limit and the
//!   reads the installation's next listing needs, until the window resets;
//! - a pull request is evaluated at most once per [`ChecksBudget::evaluation_spacing`];
//! - the writes that post runs go at most one per
//!   [`ChecksBudget::post_spacing`] per installation, under GitHub's limit
//!   on content-creating requests, so checks never cause the secondary
//!   limit that would pause the sync's reads too.
//!
//! The budget is read from the same rate-limit state every request of the
//! installation updates ([`crate::github::rate_limit::RateLimits`]); a
//! budget no answer has told yet is not held back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::github::checks_api::ChecksApi;
use crate::github::http::CallError;
use crate::github::rate_limit::Resource;
use crate::source::InstallationId;

/// Longest a post waits for its turn before it is put off to a later pass
/// (the pass bounds each post in time).
const MAX_TURN_WAIT: Duration = Duration::from_secs(20);

/// The checks' share of the budget; see the module doc.
#[derive(Debug, Clone)]
pub struct ChecksBudget {
    /// Whether checks keep the reserve for the sync.
    pub reserve: bool,
    pub evaluation_spacing: Duration,
    pub post_spacing: Duration,
    turns: Arc<Mutex<HashMap<InstallationId, Instant>>>,
}

impl Default for ChecksBudget {
    fn default() -> Self {
        Self {
            reserve: true,
            evaluation_spacing: crate::registry::check_records::check_requests::EVALUATION_SPACING,
            post_spacing: Duration::from_secs(1),
            turns: Arc::default(),
        }
    }
}

/// The requests a resource keeps for the sync (shared with the
/// directory's whole reads).
pub use crate::github::budget_share::sync_reserve as reserve;

impl ChecksBudget {
    /// Takes one request of `resource` of `installation` for a check, or
    /// says when checks may spend it again if what is left is at or below
    /// the reserve now.
    pub fn held_until(
        &self,
        api: &ChecksApi,
        installation: InstallationId,
        resource: Resource,
        repositories: u64,
    ) -> Option<SystemTime> {
        if !self.reserve {
            return None;
        }
        api.take_above(installation, resource, |limit| reserve(limit, repositories))
            .err()
    }

    /// [`Self::held_until`] as a call's error: a request after the first
    /// of one evaluation or post takes its own share, and when the budget
    /// left is the sync's, waits for the reset like a spent budget.
    pub fn spend(
        &self,
        api: &ChecksApi,
        installation: InstallationId,
        resource: Resource,
        repositories: u64,
    ) -> Result<(), CallError> {
        match self.held_until(api, installation, resource, repositories) {
            None => Ok(()),
            Some(resets_at) => Err(CallError::BudgetSpent {
                wait: resets_at
                    .duration_since(SystemTime::now())
                    .unwrap_or_default()
                    .max(Duration::from_secs(1)),
                resets_at,
            }),
        }
    }

    /// Waits for the installation's next turn to write, at least
    /// `post_spacing` after the previous one; `Err(wait)` without taking a
    /// turn when that is more than [`MAX_TURN_WAIT`] away.
    pub async fn turn(&self, installation: InstallationId) -> Result<(), Duration> {
        let at = {
            let Ok(mut turns) = self.turns.lock() else {
                return Ok(());
            };
            let now = Instant::now();
            let next = turns.get(&installation).copied().unwrap_or(now).max(now);
            if next - now > MAX_TURN_WAIT {
                return Err(next - now);
            }
            turns.insert(installation, next + self.post_spacing);
            // Turns long past are forgotten, so the map holds only the
            // installations writing now.
            turns.retain(|_, turn| *turn + self.post_spacing > now);
            next
        };
        tokio::time::sleep_until(at).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn writes_of_one_installation_should_be_a_second_apart() {
        let budget = ChecksBudget::default();
        let start = Instant::now();
        for _ in 0..3 {
            budget.turn(InstallationId(7)).await.expect("a turn");
        }
        assert_eq!(Instant::now() - start, Duration::from_secs(2));
        budget
            .turn(InstallationId(8))
            .await
            .expect("another installation");
        assert_eq!(Instant::now() - start, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_too_far_away_should_be_refused_not_awaited() {
        let budget = ChecksBudget::default();
        let mut refused = None;
        for _ in 0..30 {
            if let Err(wait) = tokio::time::timeout(Duration::ZERO, budget.turn(InstallationId(7)))
                .await
                .unwrap_or(Ok(()))
            {
                refused = Some(wait);
                break;
            }
        }
        let wait = refused.expect("a turn more than 20 s away is refused");
        assert!(wait > MAX_TURN_WAIT, "{wait:?}");
    }
}
