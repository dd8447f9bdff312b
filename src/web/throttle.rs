//! One failure throttle for everything that takes the API token: the write
//! API's bearer check and the dashboard's sign-in form (SPEC §8). A client
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

use super::client::ClientKey;

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
mod tests {
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Arc;

    use super::*;

    fn client(last: u8) -> ClientKey {
        ClientKey::of(Some(IpAddr::from([192, 0, 2, last])))
    }

    fn wrong(throttle: &FailureThrottle, client: ClientKey, now: Instant) -> Attempt {
        throttle.attempt(client, now, || false)
    }

    fn right(throttle: &FailureThrottle, client: ClientKey, now: Instant) -> Attempt {
        throttle.attempt(client, now, || true)
    }

    /// Fails `client` until it is locked.
    fn lock_out(throttle: &FailureThrottle, client: ClientKey, now: Instant) {
        for n in 1..=MAX_FAILURES {
            let locked = n == MAX_FAILURES;
            assert_eq!(wrong(throttle, client, now), Attempt::Wrong { locked });
        }
    }

    #[test]
    fn a_client_should_be_locked_after_ten_wrong_tokens_even_with_the_right_one() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        lock_out(&throttle, client(1), start);
        let later = start + Duration::from_secs(60);
        let locked = Attempt::Locked {
            wait: WINDOW - Duration::from_secs(60),
        };
        assert_eq!(wrong(&throttle, client(1), later), locked);
        let mut asked = false;
        let answer = throttle.attempt(client(1), later, || {
            asked = true;
            true
        });
        assert_eq!(answer, locked);
        assert!(!asked, "a locked client's token is not even compared");
        assert_eq!(
            right(&throttle, client(2), later),
            Attempt::Right,
            "others are not locked"
        );
    }

    #[test]
    fn the_lock_should_last_a_window_from_the_tenth_failure() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        for n in 0..MAX_FAILURES - 1 {
            let _ = wrong(
                &throttle,
                client(1),
                start + Duration::from_secs(u64::from(n)),
            );
        }
        let tenth = start + Duration::from_secs(200);
        assert_eq!(
            wrong(&throttle, client(1), tenth),
            Attempt::Wrong { locked: true }
        );
        let just_before = tenth + WINDOW - Duration::from_secs(1);
        assert_eq!(
            right(&throttle, client(1), just_before),
            Attempt::Locked {
                wait: Duration::from_secs(1)
            }
        );
        assert_eq!(right(&throttle, client(1), tenth + WINDOW), Attempt::Right);
        // And the count starts afresh.
        lock_out(&throttle, client(1), tenth + WINDOW);
    }

    #[test]
    fn failures_older_than_the_window_should_not_count() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            let _ = wrong(&throttle, client(1), start);
        }
        lock_out(&throttle, client(1), start + WINDOW);
    }

    #[test]
    fn the_right_token_should_not_wipe_the_failures() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            let _ = wrong(&throttle, client(1), start);
        }
        assert_eq!(right(&throttle, client(1), start), Attempt::Right);
        assert_eq!(
            wrong(&throttle, client(1), start),
            Attempt::Wrong { locked: true }
        );
    }

    #[test]
    fn ipv6_clients_should_share_a_count_per_64() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        for n in 1..=MAX_FAILURES {
            let address: IpAddr = format!("2001:db8:1:2::{n:x}")
                .parse()
                .unwrap_or(IpAddr::from([0; 4]));
            let _ = wrong(&throttle, ClientKey::of(Some(address)), start);
        }
        let same: IpAddr = "2001:db8:1:2:ffff::1"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap_or(IpAddr::from([0; 4]));
        assert!(matches!(
            right(&throttle, ClientKey::of(Some(same)), start),
            Attempt::Locked { .. }
        ));
        assert_eq!(
            right(&throttle, ClientKey::of(Some(other)), start),
            Attempt::Right
        );
    }

    #[test]
    fn parallel_tries_should_not_pass_the_limit_together() {
        let throttle = Arc::new(FailureThrottle::default());
        let start = Instant::now();
        let compared: usize = (0..8)
            .map(|_| {
                let throttle = throttle.clone();
                std::thread::spawn(move || {
                    (0..10)
                        .filter(|_| {
                            !matches!(wrong(&throttle, client(1), start), Attempt::Locked { .. })
                        })
                        .count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap_or(0))
            .sum();
        assert_eq!(compared, MAX_FAILURES as usize);
    }

    #[test]
    fn right_tokens_should_take_no_room() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        for n in 0..1000u32 {
            let key = ClientKey::of(Some(IpAddr::from(Ipv4Addr::from(n))));
            assert_eq!(right(&throttle, key, start), Attempt::Right);
        }
        assert_eq!(throttle.tracked(), 0);
    }

    #[test]
    fn the_table_should_stay_bounded_and_full_clients_share_one_count() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        let address = |n: u32| ClientKey::of(Some(IpAddr::from(Ipv4Addr::from(0x0a00_0000 + n))));
        let count = MAX_CLIENTS as u32;
        for n in 0..count {
            let _ = wrong(&throttle, address(n), start);
        }
        assert_eq!(throttle.tracked(), MAX_CLIENTS);
        // Past the bound, new clients share the overflow count...
        lock_out(&throttle, address(count), start);
        assert!(matches!(
            wrong(&throttle, address(count + 1), start),
            Attempt::Locked { .. }
        ));
        assert_eq!(throttle.tracked(), MAX_CLIENTS);
        // ...while the tracked ones keep theirs.
        assert_eq!(right(&throttle, address(7), start), Attempt::Right);
        // Once the counts expire they are swept out, and a new client has
        // a count of its own again.
        let later = start + WINDOW;
        assert_eq!(right(&throttle, address(count + 1), later), Attempt::Right);
        assert_eq!(
            wrong(&throttle, address(count + 2), later),
            Attempt::Wrong { locked: false }
        );
        assert_eq!(throttle.tracked(), 1);
    }

    #[test]
    fn a_full_table_should_be_swept_at_most_once_a_second() {
        let throttle = FailureThrottle::default();
        let start = Instant::now();
        let address = |n: u32| ClientKey::of(Some(IpAddr::from(Ipv4Addr::from(0x0a00_0000 + n))));
        let count = MAX_CLIENTS as u32;
        // Half the counts are old enough to expire at `start + WINDOW`.
        for n in 0..count {
            let at = if n % 2 == 0 {
                start
            } else {
                start + Duration::from_secs(10)
            };
            let _ = wrong(&throttle, address(n), at);
        }
        let expiry = start + WINDOW;
        let _ = wrong(
            &throttle,
            address(count),
            expiry - Duration::from_millis(500),
        );
        assert_eq!(
            throttle.tracked(),
            MAX_CLIENTS,
            "swept, nothing expired yet"
        );
        let _ = wrong(&throttle, address(count + 1), expiry);
        assert_eq!(
            throttle.tracked(),
            MAX_CLIENTS,
            "too soon for another sweep"
        );
        let _ = wrong(
            &throttle,
            address(count + 2),
            expiry + Duration::from_millis(600),
        );
        assert_eq!(throttle.tracked(), MAX_CLIENTS / 2 + 1);
    }
}
