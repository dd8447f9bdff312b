//! One failure throttle for everything that takes the API token: the write
//! API's bearer check and the dashboard's sign-in form (docs/contract.md#bounds). A client
//! (see [`ClientKey`]) that presents [`MAX_FAILURES`] wrong tokens within
//! [`WINDOW`] is locked out of both for [`WINDOW`], even with the right
//! token: answering the right one differently would tell a guesser when it
//! has found it.
//!
//! A right token does not wipe a client's failures: clients share keys (a
//! NAT, an IPv6 /64), and one that knows the token must not reset the count
//! of one that guesses beside it.
//!
//! The counts live in the process, so each replica keeps its own; that is
//! enough to turn guessing from thousands of tries a second into a handful
//! a minute. The table is bounded ([`MAX_CLIENTS`]): expired counts are
//! swept out when it is full, and while it stays full, clients without a
//! count of their own share one overflow count. Live counts are never
//! evicted, or a guesser with many addresses could cycle through them to
//! wipe its own locks.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::throttle_key::ClientKey;

/// Wrong tokens a client may present within one [`WINDOW`].
pub const MAX_FAILURES: u32 = 10;

/// How long a run of failures counts, and how long a locked client waits.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);

/// Clients with a count at once; past this, see the module's doc.
pub const MAX_CLIENTS: usize = 50_000;

/// The shortest time between two sweeps of a full table, so that a flood
/// of new clients does not pay a scan of the whole table each.
const SWEEP_PAUSE: Duration = Duration::from_secs(1);

/// What became of one presented token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The right token, from a client that is not locked.
    Right,
    /// A wrong token; `locked` when it was the one that locked the client.
    Wrong { locked: bool },
    /// The client is locked (the token was not even looked at); it may try
    /// again after `wait`.
    Locked { wait: Duration },
}

/// Wrong tokens per client; shared by every route that takes the token.
#[derive(Debug, Default)]
pub struct FailureThrottle {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    clients: HashMap<ClientKey, Failures>,
    /// The count of clients that found the table full.
    overflow: Option<Failures>,
    last_sweep: Option<Instant>,
}

/// A client's run of failures: it started at `first`; once `count`
/// reached [`MAX_FAILURES`] the client is locked until `locked_until`.
#[derive(Debug, Clone, Copy)]
struct Failures {
    first: Instant,
    count: u32,
    locked_until: Option<Instant>,
}

impl Failures {
    fn new(now: Instant) -> Self {
        Self {
            first: now,
            count: 0,
            locked_until: None,
        }
    }

    /// Whether this run no longer counts: its lock is over, or it never
    /// locked and its window has passed.
    fn expired(&self, now: Instant) -> bool {
        match self.locked_until {
            Some(until) => now >= until,
            None => now.duration_since(self.first) >= WINDOW,
        }
    }

    /// How long the client still waits, when locked.
    fn wait(&self, now: Instant) -> Option<Duration> {
        let until = self.locked_until.filter(|until| *until > now)?;
        Some(until.saturating_duration_since(now))
    }

    /// Counts one wrong token; true when it locks the client.
    fn fail(&mut self, now: Instant) -> bool {
        self.count += 1;
        let locks = self.count >= MAX_FAILURES;
        if locks {
            self.locked_until = Some(now + WINDOW);
        }
        locks
    }
}

/// Where a client's failures are counted.
#[derive(Clone, Copy)]
enum Slot {
    Own,
    Overflow,
    /// No count yet, and there is room for one.
    New,
}

impl FailureThrottle {
    /// Decides one presented token of `client`: refused unseen while the
    /// client is locked, else `is_right` is asked and a wrong token counted.
    /// `is_right` runs under the table's lock, so parallel tries cannot slip
    /// past the limit together; it must be quick (a digest comparison).
    pub fn attempt(
        &self,
        client: ClientKey,
        now: Instant,
        is_right: impl FnOnce() -> bool,
    ) -> Attempt {
        let mut table = self.lock();
        let slot = table.slot(client, now);
        let failures = match slot {
            Slot::Own => table.clients.get_mut(&client),
            Slot::Overflow => table.overflow.as_mut(),
            Slot::New => None,
        };
        if let Some(wait) = failures.as_ref().and_then(|f| f.wait(now)) {
            return Attempt::Locked { wait };
        }
        if is_right() {
            return Attempt::Right;
        }
        let failures = match failures {
            Some(failures) => failures,
            None => match slot {
                Slot::Overflow => table.overflow.insert(Failures::new(now)),
                _ => table.clients.entry(client).or_insert(Failures::new(now)),
            },
        };
        Attempt::Wrong {
            locked: failures.fail(now),
        }
    }

    /// Clients with a count of their own (for tests of the bound).
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.lock().clients.len()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // The table holds counters only; one left half-updated by a panic
        // is still a usable count.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Table {
    /// Finds where `client` is counted, dropping counts that expired.
    fn slot(&mut self, client: ClientKey, now: Instant) -> Slot {
        if self.overflow.is_some_and(|f| f.expired(now)) {
            self.overflow = None;
        }
        match self.clients.get(&client) {
            Some(failures) if failures.expired(now) => {
                self.clients.remove(&client);
                Slot::New
            }
            Some(_) => Slot::Own,
            None if self.clients.len() < MAX_CLIENTS => Slot::New,
            None => {
                self.sweep(now);
                if self.clients.len() < MAX_CLIENTS {
                    Slot::New
                } else {
                    Slot::Overflow
                }
            }
        }
    }

    /// Drops every expired count, at most once per [`SWEEP_PAUSE`].
    fn sweep(&mut self, now: Instant) {
        if self
            .last_sweep
            .is_some_and(|last| now.saturating_duration_since(last) < SWEEP_PAUSE)
        {
            return;
        }
        self.last_sweep = Some(now);
        self.clients.retain(|_, failures| !failures.expired(now));
    }
}

#[cfg(test)]
mod tests;
