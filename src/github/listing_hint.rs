//! The listing's hint: what a listing page read of a repository, handed
//! to the worker with its id so that the read is not paid twice, and
//! which of those may still be applied.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::storage::GithubStorage;
use crate::source::touched_push::TouchedPush;
use crate::source::{Observed, RepoId};

/// What the listing hands a worker: the repository as its page read it,
/// and when that page was asked for.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Hint {
    /// When the page was asked for: anything applied since is newer.
    pub read_at: DateTime<Utc>,
    pub observed: Observed,
}

/// The listing's observation in `hint` with its read time (none in a hint
/// written without one); `None` (read GitHub) when it does not decode.
pub(super) fn decode_hint(key: RepoId, hint: &[u8]) -> Option<(Observed, Option<DateTime<Utc>>)> {
    // What a push touched is no listing's answer: it is read in part.
    if TouchedPush::decode(hint).is_some() {
        return None;
    }
    if let Ok(Hint { read_at, observed }) = serde_json::from_slice::<Hint>(hint) {
        return Some((observed, Some(read_at)));
    }
    match serde_json::from_slice::<Observed>(hint) {
        Ok(observed) => Some((observed, None)),
        Err(error) => {
            tracing::warn!(repo = %key, %error, "unusable listing hint; reading GitHub");
            None
        }
    }
}

impl GithubStorage {
    /// The hints of `items` that may be applied, by index: a hint whose
    /// repository had an observation applied after the listing read it (a
    /// push read or decided meanwhile) is older than the registry and is
    /// left out, so that repository is read afresh. When the registry
    /// cannot say, every hint is left out (read afresh: never older).
    pub(super) async fn usable_hints(
        &self,
        items: &[(RepoId, Option<&[u8]>)],
    ) -> HashMap<usize, Observed> {
        let mut decoded = HashMap::new();
        let mut timed = Vec::new();
        for (index, (id, hint)) in items.iter().enumerate() {
            if let Some((observed, read_at)) = hint.and_then(|h| decode_hint(*id, h)) {
                if let Some(at) = read_at {
                    timed.push((*id, at));
                }
                decoded.insert(index, (*id, observed));
            }
        }
        let newer = match self.client.registry.observed_since(&timed).await {
            Ok(newer) => newer,
            Err(error) => {
                tracing::warn!(%error, "cannot compare listing hints with the registry; reading GitHub");
                return HashMap::new();
            }
        };
        decoded
            .into_iter()
            .filter_map(|(index, (id, observed))| {
                if newer.contains(&id) {
                    tracing::debug!(repo = %id, "listing hint older than the registry; reading GitHub");
                    return None;
                }
                Some((index, observed))
            })
            .collect()
    }
}
