//! What a reconcile that could not apply an observation leaves behind:
//! the failure or the wait shown on the repository, or, for a push's
//! partial read that no longer applies, the repository read again whole.

use super::handler::{lease_lost, record_name, RegistryHandler};
use super::{repos, RegistryError};
use crate::controller::{Claim, Enqueue, Failure, Trigger, WorkQueue};
use crate::db::fence::{commit_if_held, ClaimFence};
use crate::source::RepoId;

impl<Q> RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    /// A push's partial read that no longer applies (nothing was written):
    /// the repository runs again once this claim ends, read whole, since
    /// an enqueue without what the push touched drops it.
    pub(super) async fn read_again(&self, key: RepoId) -> Result<&'static str, Failure> {
        let again = Enqueue::because(key, Trigger::Push);
        match self.queue.enqueue(vec![again]).await {
            Ok(()) => Ok("read again"),
            Err(error) => Err(Failure::new(RegistryError::NotReadAgain(Box::new(error)))),
        }
    }

    /// Shows a failure on the repository (status `error`), best effort:
    /// the database may be what failed. Like a reconcile, it commits only
    /// while the claim is live.
    pub(super) async fn record_failure(
        &self,
        key: RepoId,
        message: &str,
        claim: Option<&Claim<RepoId>>,
    ) {
        self.show(key, Shown::Failure(message), claim).await;
    }

    /// Shows that the repository waits for GitHub's budget (status
    /// `pending` with the reset time), best effort, and like a failure only
    /// while the claim is live.
    pub(super) async fn record_wait(
        &self,
        key: RepoId,
        message: &str,
        claim: Option<&Claim<RepoId>>,
    ) {
        self.show(key, Shown::Wait(message), claim).await;
    }

    /// Writes `shown` on the repository while `claim` is live, best effort.
    async fn show(&self, key: RepoId, shown: Shown<'_>, claim: Option<&Claim<RepoId>>) {
        let what = match shown {
            Shown::Failure(_) => "failure",
            Shown::Wait(_) => "wait",
        };
        let recorded = async {
            let mut tx = self.pool.begin().await?;
            let name = match shown {
                Shown::Failure(message) => repos::record_error(&mut tx, key, message).await?,
                Shown::Wait(message) => repos::record_waiting(&mut tx, key, message).await?,
            };
            if name.is_none() {
                return Ok(None);
            }
            if !commit_if_held(&*self.queue, tx, claim).await? {
                tracing::warn!(repo = %key, "{}; the {what} is not recorded", lease_lost(key));
                return Ok(None);
            }
            Ok::<_, RegistryError>(name)
        };
        match recorded.await {
            Ok(name) => record_name(name),
            Err(error) => tracing::warn!(repo = %key, %error, "could not record a {what}"),
        }
    }
}

/// What a run that applied nothing shows on its repository.
#[derive(Clone, Copy)]
enum Shown<'a> {
    /// Status `error` with the message.
    Failure(&'a str),
    /// Status `pending`: the read waits for GitHub's budget.
    Wait(&'a str),
}

#[cfg(test)]
mod tests {
    use crate::registry::known;
    use crate::source::RepoId;
    use crate::testing;

    const ID: RepoId = RepoId(5);

    /// When the registry last applied an observation of [`ID`].
    async fn observed_at(pool: &sqlx::PgPool) -> Option<chrono::DateTime<chrono::Utc>> {
        sqlx::query_scalar("select observed_at from repositories where id = $1")
            .bind(ID)
            .fetch_one(pool)
            .await
            .expect("the row")
    }

    #[tokio::test]
    async fn a_failure_or_a_wait_shown_should_not_make_a_listing_hint_look_stale() {
        let (pool, _url) = testing::fresh_database()
            .await
            .expect("a fresh test database");
        let handler = testing::handler(&pool, testing::queue(&pool));
        let repo = testing::github_repo("acme", "svc", 1);
        known::ensure_known(&pool, &[(ID, repo)])
            .await
            .expect("known");
        // A listing page read the repository; applying its answer failed
        // once (or waited for the budget). Nothing was applied, so on the
        // retry the page's hint is still the newest answer: it must be
        // applied without another read (one trigger, one listing).
        let read_at = chrono::Utc::now();
        handler.record_failure(ID, "database busy", None).await;
        let registry = crate::registry::RegistryDb::new(pool.clone());
        assert!(
            registry
                .observed_since(&[(ID, read_at)])
                .await
                .expect("compared")
                .is_empty(),
            "a failure shown is no observation: {:?}",
            observed_at(&pool).await
        );
        handler
            .record_wait(ID, "waiting for GitHub's rate limit", None)
            .await;
        assert_eq!(observed_at(&pool).await, None, "a wait shown neither");
        let status: String = sqlx::query_scalar("select status from repositories where id = $1")
            .bind(ID)
            .fetch_one(&pool)
            .await
            .expect("the status");
        assert_eq!(status, "pending", "the wait is shown");
    }
}
