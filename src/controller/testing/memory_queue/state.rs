//! The memory queue's items: both indexes (waiting by lane and time,
//! leased by expiry) kept in step, and which key is ready next.

use std::hash::Hash;

use tokio::time::Instant;

use super::{Item, State};
use crate::controller::queue::Trigger;

impl<K: Clone + Eq + Hash + Ord> State<K> {
    /// Applies `f` to the item of `key`, keeping both indexes in step.
    pub(super) fn update<R>(&mut self, key: &K, f: impl FnOnce(&mut Item) -> R) -> Option<R> {
        let State {
            items,
            waiting,
            leases,
            ..
        } = self;
        let item = items.get_mut(key)?;
        match &item.claim {
            Some(l) => leases.remove(&(l.until, key.clone())),
            None => waiting[lane(item.trigger)].remove(&(item.not_before, key.clone())),
        };
        let out = f(item);
        match &item.claim {
            Some(l) => leases.insert((l.until, key.clone())),
            None => waiting[lane(item.trigger)].insert((item.not_before, key.clone())),
        };
        Some(out)
    }

    pub(super) fn remove(&mut self, key: &K) {
        if let Some(item) = self.items.remove(key) {
            match item.claim {
                Some(l) => self.leases.remove(&(l.until, key.clone())),
                None => self.waiting[lane(item.trigger)].remove(&(item.not_before, key.clone())),
            };
        }
    }

    /// Whether `token` is the claim `key` holds now.
    pub(super) fn holds(&self, key: &K, token: &str) -> bool {
        self.items
            .get(key)
            .and_then(|i| i.claim.as_ref())
            .is_some_and(|l| l.token == token)
    }

    /// The next claimable key: an expired lease first (its work is the
    /// oldest), else the unclaimed key that has been ready longest of the
    /// first lane, then of the listing lane; every tenth claim looks at
    /// the listing lane first. With `reads`, only keys without a hint.
    pub(super) fn next_ready(&self, now: Instant, reads: bool) -> Option<K> {
        let wanted = |k: &K| !reads || self.items.get(k).is_some_and(|i| i.hint.is_none());
        let expired = || {
            self.leases
                .iter()
                .take_while(|(until, _)| *until <= now)
                .find(|(_, k)| wanted(k))
        };
        let ready = |lane: usize| {
            self.waiting[lane]
                .iter()
                .take_while(|(not_before, _)| *not_before <= now)
                .find(|(_, k)| wanted(k))
        };
        let lanes = match self.claims % 10 == 9 {
            true => [LISTING, FIRST],
            false => [FIRST, LISTING],
        };
        expired()
            .or_else(|| ready(lanes[0]))
            .or_else(|| ready(lanes[1]))
            .map(|(_, k)| k.clone())
    }
}

/// The lane of work that is claimed first, and of listing work.
const FIRST: usize = 0;
const LISTING: usize = 1;

pub(super) fn lane(trigger: Trigger) -> usize {
    match trigger.is_listing() {
        true => LISTING,
        false => FIRST,
    }
}

/// A hint survives only while every pending trigger carried one.
pub(super) fn merge_hint(pending: Option<Vec<u8>>, new: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (pending, new) {
        (Some(_), Some(new)) => Some(new),
        _ => None,
    }
}
