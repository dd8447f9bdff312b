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

/// Tries without a success an address may make within one [`WINDOW`].
pub const MAX_TRIES: u32 = 10;

/// How long a run of tries counts, and how long a locked address waits.
pub const WINDOW: Duration = Duration::from_secs(5 * 60);

/// Addresses tracked at once; past this the oldest windows are forgotten
/// first, so a flood of addresses cannot grow memory without bound.
const MAX_ADDRESSES: usize = 10_000;

/// Sign-in tries per client address since its last success.
#[derive(Debug, Default)]
pub struct SignInThrottle {
    tries: Mutex<HashMap<Option<IpAddr>, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    count: u32,
}

impl SignInThrottle {
    /// Counts a try from `client` before its token is checked, or refuses
    /// it with `Err(wait)` when `client` used up its tries: it may try again
    /// after `wait`. Counting first means parallel tries cannot slip past
    /// the limit together. `None` stands for a client whose address is not
    /// known.
    pub fn begin(&self, client: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let mut tries = self.lock();
        if tries.len() >= MAX_ADDRESSES && !tries.contains_key(&client) {
            tries.retain(|_, window| now.duration_since(window.started) < WINDOW);
            if tries.len() >= MAX_ADDRESSES {
                let oldest = tries
                    .iter()
                    .min_by_key(|(_, window)| window.started)
                    .map(|(address, _)| *address);
                if let Some(oldest) = oldest {
                    tries.remove(&oldest);
                }
            }
        }
        let window = tries.entry(client).or_insert(Window {
            started: now,
            count: 0,
        });
        if now.duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                count: 0,
            };
        }
        if window.count >= MAX_TRIES {
            return Err((window.started + WINDOW).saturating_duration_since(now));
        }
        window.count += 1;
        Ok(())
    }

    /// Forgets `client`'s tries: it proved it holds the token.
    pub fn succeeded(&self, client: Option<IpAddr>) {
        self.lock().remove(&client);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Window>> {
        // The map holds counters only; one left half-updated by a panic is
        // still a usable count.
        self.tries
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
        for _ in 0..MAX_TRIES {
            assert_eq!(throttle.begin(address(1), start), Ok(()));
        }
        let later = start + Duration::from_secs(60);
        assert_eq!(
            throttle.begin(address(1), later),
            Err(WINDOW - Duration::from_secs(60))
        );
        assert_eq!(
            throttle.begin(address(2), later),
            Ok(()),
            "others are not locked"
        );
        assert_eq!(throttle.begin(address(1), start + WINDOW), Ok(()));
    }

    #[test]
    fn a_new_window_should_count_from_zero() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_TRIES {
            assert_eq!(throttle.begin(address(1), start), Ok(()));
        }
        let next = start + WINDOW;
        for _ in 0..MAX_TRIES {
            assert_eq!(throttle.begin(address(1), next), Ok(()));
        }
        assert!(throttle.begin(address(1), next).is_err());
    }

    #[test]
    fn a_success_should_forget_the_tries() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_TRIES {
            assert_eq!(throttle.begin(None, start), Ok(()));
        }
        assert!(throttle.begin(None, start).is_err());
        throttle.succeeded(None);
        assert_eq!(throttle.begin(None, start), Ok(()));
    }

    #[test]
    fn parallel_tries_should_not_pass_the_limit_together() {
        let throttle = std::sync::Arc::new(SignInThrottle::default());
        let start = Instant::now();
        let allowed: usize = (0..8)
            .map(|_| {
                let throttle = throttle.clone();
                std::thread::spawn(move || {
                    (0..10)
                        .filter(|_| throttle.begin(address(1), start).is_ok())
                        .count()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap_or(0))
            .sum();
        assert_eq!(allowed, MAX_TRIES as usize);
    }

    #[test]
    fn the_map_should_stay_bounded() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for n in 0..(MAX_ADDRESSES as u32 + 50) {
            let client = Some(IpAddr::from(n.to_be_bytes()));
            let _ = throttle.begin(client, start + Duration::from_millis(u64::from(n)));
        }
        assert!(throttle.lock().len() <= MAX_ADDRESSES);
    }
}
