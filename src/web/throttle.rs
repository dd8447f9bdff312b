//! Slows down guessing the API token through the dashboard's sign-in form:
//! each client address gets a few wrong tokens per window, then waits.
//!
//! The count lives in the process, so each replica keeps its own; that is
//! enough to turn guessing from thousands of tries a second into a handful
//! a minute. Behind a proxy every client shares the proxy's address, so a
//! stranger can lock the form for everyone for one window; the write API's
//! bearer token keeps working then.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens an address may send within one [`WINDOW`].
pub const MAX_FAILURES: u32 = 10;

/// How long a run of failures counts, and how long a locked address waits.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);

/// Addresses tracked at once; past this the oldest windows are forgotten
/// first, so a flood of addresses cannot grow memory without bound.
const MAX_ADDRESSES: usize = 10_000;

/// Failed sign-ins per client address.
#[derive(Debug, Default)]
pub struct SignInThrottle {
    failures: Mutex<HashMap<Option<IpAddr>, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    count: u32,
}

impl SignInThrottle {
    /// `Err(wait)` when `client` used up its tries: it may try again after
    /// `wait`. `None` stands for a client whose address is not known.
    pub fn check(&self, client: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let failures = self.lock();
        match failures.get(&client) {
            Some(window) if window.count >= MAX_FAILURES => {
                let ends = window.started + WINDOW;
                if ends > now {
                    Err(ends - now)
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// Counts a wrong token from `client`.
    pub fn failed(&self, client: Option<IpAddr>, now: Instant) {
        let mut failures = self.lock();
        if failures.len() >= MAX_ADDRESSES && !failures.contains_key(&client) {
            failures.retain(|_, window| now.duration_since(window.started) < WINDOW);
            if failures.len() >= MAX_ADDRESSES {
                let oldest = failures
                    .iter()
                    .min_by_key(|(_, window)| window.started)
                    .map(|(address, _)| *address);
                if let Some(oldest) = oldest {
                    failures.remove(&oldest);
                }
            }
        }
        let window = failures.entry(client).or_insert(Window {
            started: now,
            count: 0,
        });
        if now.duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                count: 0,
            };
        }
        window.count = window.count.saturating_add(1);
    }

    /// Forgets `client`'s failures: it proved it holds the token.
    pub fn succeeded(&self, client: Option<IpAddr>) {
        self.lock().remove(&client);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Window>> {
        // The map holds counters only; one left half-updated by a panic is
        // still a usable count.
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([192, 0, 2, last]))
    }

    #[test]
    fn an_address_should_be_locked_after_its_tries_until_the_window_ends() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert_eq!(throttle.check(address(1), start), Ok(()));
            throttle.failed(address(1), start);
        }
        let later = start + Duration::from_secs(60);
        assert_eq!(
            throttle.check(address(1), later),
            Err(WINDOW - Duration::from_secs(60))
        );
        assert_eq!(
            throttle.check(address(2), later),
            Ok(()),
            "others are not locked"
        );
        assert_eq!(throttle.check(address(1), start + WINDOW), Ok(()));
    }

    #[test]
    fn a_new_window_should_count_from_zero() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed(address(1), start);
        }
        let next = start + WINDOW;
        throttle.failed(address(1), next);
        assert_eq!(throttle.check(address(1), next), Ok(()));
    }

    #[test]
    fn a_success_should_forget_the_failures() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            throttle.failed(None, start);
        }
        assert!(throttle.check(None, start).is_err());
        throttle.succeeded(None);
        assert_eq!(throttle.check(None, start), Ok(()));
    }

    #[test]
    fn the_map_should_stay_bounded() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for n in 0..(MAX_ADDRESSES as u32 + 50) {
            let client = Some(IpAddr::from(n.to_be_bytes()));
            throttle.failed(client, start + Duration::from_millis(u64::from(n)));
        }
        assert!(throttle.lock().len() <= MAX_ADDRESSES);
    }
}
