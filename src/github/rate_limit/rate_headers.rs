//! The rate-limit headers of one GitHub answer, and the wait they ask for
//! after a rate-limit answer.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;

/// GitHub's advice after a secondary limit that names no wait: one minute.
const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// The longest wait taken from an answer; GitHub's are an hour at most, and
/// a larger number (a broken proxy, a hostile server) must not overflow.
pub(super) const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// The rate-limit headers of one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateHeaders {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Epoch seconds at which the window resets.
    pub reset: Option<u64>,
    /// `retry-after`, in seconds.
    pub retry_after: Option<u64>,
}

impl RateHeaders {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let number = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        Self {
            limit: number("x-ratelimit-limit"),
            remaining: number("x-ratelimit-remaining"),
            reset: number("x-ratelimit-reset"),
            retry_after: number("retry-after"),
        }
    }

    /// Whether a 403 with these headers is a rate limit rather than a refusal
    /// (GitHub sends 403 for both; `body_mentions_limit` covers secondary
    /// limits that carry neither header).
    pub fn is_rate_limited(&self, status: u16, body_mentions_limit: bool) -> bool {
        match status {
            429 => true,
            403 => self.retry_after.is_some() || self.remaining == Some(0) || body_mentions_limit,
            _ => false,
        }
    }

    /// Whether a rate-limit answer is the primary limit: the budget is spent
    /// and GitHub names no other wait. Anything else is a secondary limit.
    pub fn is_primary(&self) -> bool {
        self.retry_after.is_none() && self.remaining == Some(0)
    }

    /// How long to wait after a rate-limit answer, as GitHub documents it:
    /// `retry-after` first, else until the reset when nothing is left, else
    /// a minute; never more than [`MAX_WAIT`].
    pub fn wait(&self, now: SystemTime) -> Duration {
        if let Some(secs) = self.retry_after {
            return Duration::from_secs(secs).min(MAX_WAIT);
        }
        if self.remaining == Some(0) {
            if let Some(reset) = self.reset {
                return until(reset, now).clamp(Duration::from_secs(1), MAX_WAIT);
            }
        }
        DEFAULT_WAIT
    }
}

/// Time from `now` until the epoch second `at` (zero when past).
pub(super) fn until(at: u64, now: SystemTime) -> Duration {
    let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    Duration::from_secs(at).saturating_sub(now)
}
