//! The long way for the rest of a controller batch, in one transaction.
//!
//! Every reconcile that writes a change takes the change log's head until
//! its commit is on disk (`changes::append`), so reconciles that each
//! commit alone go one at a time, at the disk's pace. Here the keys a
//! batch could not write in one statement share a commit: each is applied
//! under its own savepoint and its claim checked and locked, then all
//! their changes are appended at once. A key that fails in any way is
//! rolled back to its savepoint and left to the controller, which applies
//! it alone (and so records its failure, reads it again, or says its lease
//! was lost) as it would have without this.

use sqlx::{PgConnection, Postgres, Transaction};

use super::changes::append;
use super::changes::record::Pending;
use super::handler::RegistryHandler;
use super::long_way::Applied;
use crate::controller::{AppliedTogether, Claim, Failure, WorkQueue};
use crate::db::fence::ClaimFence;
use crate::project::relations::RelationsMode;
use crate::source::{Observed, RepoId};

/// Fewest keys worth a shared transaction: one alone takes the usual way.
const FEWEST: usize = 2;

impl<Q> RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    /// Applies, in one transaction, the keys of `claims` that `together`
    /// leaves unapplied and whose read succeeded, filling in `together`
    /// for those committed.
    pub(super) async fn long_way_together(
        &self,
        claims: &[Claim<RepoId>],
        states: &[Result<Observed, Failure>],
        together: &mut [Option<AppliedTogether>],
    ) {
        let rest: Vec<(usize, &Claim<RepoId>, &Observed)> = claims
            .iter()
            .zip(states)
            .enumerate()
            .filter(|(n, _)| together.get(*n).is_some_and(Option::is_none))
            .filter_map(|(n, (claim, state))| state.as_ref().ok().map(|o| (n, claim, o)))
            .collect();
        if rest.len() < FEWEST {
            return;
        }
        let applied = match self.apply_rest(&rest).await {
            Ok(applied) => applied,
            Err(error) => {
                // Nothing committed: each key takes the way alone.
                tracing::debug!(%error, keys = rest.len(), "batch transaction failed; applying its keys alone");
                return;
            }
        };
        for (n, applied) in applied {
            let Some((_, claim, _)) = rest.iter().find(|(k, _, _)| *k == n) else {
                continue;
            };
            let id = claim.key;
            applied.log_held(id);
            self.wake_waiting(id, &applied.released).await;
            if self.relations == RelationsMode::Require {
                self.wake_dependents(id, &applied.created).await;
            }
            if let Some(slot) = together.get_mut(n) {
                *slot = Some(AppliedTogether {
                    outcome: applied.outcome,
                    name: applied.name,
                });
            }
        }
    }

    /// The transaction of [`Self::long_way_together`]: what committed, by
    /// the key's place in the batch.
    async fn apply_rest(
        &self,
        rest: &[(usize, &Claim<RepoId>, &Observed)],
    ) -> Result<Vec<(usize, Applied)>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let mut applied = Vec::new();
        for (n, claim, observed) in rest {
            sqlx::query("savepoint one_key").execute(&mut *tx).await?;
            match self.one_of_many(&mut tx, claim, observed).await {
                Some(one) => {
                    sqlx::query("release savepoint one_key")
                        .execute(&mut *tx)
                        .await?;
                    applied.push((*n, one));
                }
                None => {
                    sqlx::query("rollback to savepoint one_key")
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        if applied.is_empty() {
            tx.rollback().await?;
            return Ok(applied);
        }
        let changes: Vec<_> = applied
            .iter()
            .flat_map(|(_, one)| one.changes.iter().cloned())
            .collect();
        commit(tx, &changes).await?;
        Ok(applied)
    }

    /// One key's long way with its claim checked and locked after it;
    /// `None` when it must be rolled back and left to the controller.
    async fn one_of_many(
        &self,
        tx: &mut PgConnection,
        claim: &Claim<RepoId>,
        observed: &Observed,
    ) -> Option<Applied> {
        let applied = self
            .long_way(tx, claim.key, observed.clone(), Some(claim))
            .await
            .ok()?;
        // Locked until the commit: no other worker claims the key first.
        match self.queue.holds(tx, claim).await {
            Ok(true) => Some(applied),
            Ok(false) | Err(_) => None,
        }
    }
}

/// Appends `changes`, the claims already checked, and commits.
async fn commit(mut tx: Transaction<'_, Postgres>, changes: &[Pending]) -> Result<(), sqlx::Error> {
    append::append(&mut tx, changes).await?;
    tx.commit().await
}
