//! The long way for the rest of a controller batch, in one transaction.
//!
//! Every reconcile that writes a change takes the change log's head until
//! its commit is on disk (`changes::append`), so reconciles that each
//! commit alone go one at a time, at the disk's pace. A listing hands
//! over thousands at once (an App's installation), so here the keys of a
//! listing's batch that could not be written in one statement share a
//! commit. Keys anything else asked for (a push) keep a commit each: their
//! change shows as soon as it is applied, not when the batch ends.
//!
//! Each key is applied under its own savepoint, then every claim is
//! checked and locked, then all their changes are appended at once. A key
//! that fails is rolled back to its savepoint and left to the controller,
//! which applies it alone (and so records its failure or reads it again)
//! as it would have without this; a claim found lapsed leaves the whole
//! batch to it.
//!
//! Rows are locked in the order the webhook intake locks them: the
//! repositories by ascending id, then their queue rows by ascending id, so
//! the two never wait on each other in a circle.

use sqlx::{Postgres, Transaction};

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
    /// Applies, in one transaction, the keys of `claims` that only a
    /// listing asked for, that `together` leaves unapplied and whose read
    /// succeeded, filling in `together` for those committed.
    pub(super) async fn long_way_together(
        &self,
        claims: &[Claim<RepoId>],
        states: &[Result<Observed, Failure>],
        together: &mut [Option<AppliedTogether>],
    ) {
        let mut rest: Vec<(usize, &Claim<RepoId>, &Observed)> = claims
            .iter()
            .zip(states)
            .enumerate()
            .filter(|(n, _)| together.get(*n).is_some_and(Option::is_none))
            .filter(|(_, (claim, _))| claim.trigger.is_listing())
            .filter_map(|(n, (claim, state))| state.as_ref().ok().map(|o| (n, claim, o)))
            .collect();
        if rest.len() < FEWEST {
            return;
        }
        rest.sort_by_key(|(_, claim, _)| claim.key.0);
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
        let mut held = Vec::new();
        for (n, claim, observed) in rest {
            sqlx::query("savepoint one_key").execute(&mut *tx).await?;
            match self
                .long_way(&mut tx, claim.key, (*observed).clone(), Some(claim))
                .await
            {
                Ok(one) => {
                    sqlx::query("release savepoint one_key")
                        .execute(&mut *tx)
                        .await?;
                    applied.push((*n, one));
                    held.push(*claim);
                }
                Err(_) => {
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
        // Locked until the commit, after every repository row: no other
        // worker claims these keys first.
        for claim in held {
            if !self.queue.holds(&mut tx, claim).await? {
                tx.rollback().await?;
                return Ok(Vec::new());
            }
        }
        let changes: Vec<_> = applied
            .iter()
            .flat_map(|(_, one)| one.changes.iter().cloned())
            .collect();
        commit(tx, &changes).await?;
        Ok(applied)
    }
}

/// Appends `changes`, the claims already checked, and commits.
async fn commit(mut tx: Transaction<'_, Postgres>, changes: &[Pending]) -> Result<(), sqlx::Error> {
    append::append(&mut tx, changes).await?;
    tx.commit().await
}
