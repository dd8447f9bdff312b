//! GitHub's rate limits, learnt from every answer and honoured before every
//! request.
//!
//! GitHub counts requests per installation (and separately per App JWT) in
//! hourly windows, with a separate budget for GraphQL. Each answer says what
//! is left (`x-ratelimit-remaining`) and when the window resets
//! (`x-ratelimit-reset`, epoch seconds). Roster slows down before the budget
//! runs out (below [`LOW_WATER_PERCENT`] it spreads the rest over the time
//! left). After a rate-limit answer it sends nothing until the wait GitHub
//! asked for has passed: the caller gets the wait back instead, so a worker
//! retries later rather than hammering. What waits depends on the limit:
//! - the **primary** limit (the budget is spent: `x-ratelimit-remaining: 0`
//!   and no `retry-after`) holds only its own budget, REST or GraphQL, until
//!   that budget's reset;
//! - a **secondary** limit (any other 403/429 rate-limit answer, typically
//!   with `retry-after`, or a GraphQL `RATE_LIMITED` error while budget is
//!   left) pauses *every* request with that token, REST and GraphQL alike
//!   (docs/contract.md#bounds): GitHub counts secondary limits across both APIs, so a
//!   GraphQL query sent during a REST pause would only prolong it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::source::InstallationId;
use rate_headers::until;
pub use rate_headers::RateHeaders;
#[cfg(test)]
use rate_headers::MAX_WAIT;

mod rate_headers;

/// Below this share of the window's limit, requests are spread out.
pub const LOW_WATER_PERCENT: u64 = 5;

/// Waits up to this long are taken in place; longer ones are handed back.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Below the low-water mark, requests that may go at once after a quiet
/// spell: a read that takes a few requests (a batch, then a file) is not
/// cut in pieces by the spread, each retried from the start.
pub const LOW_BURST: u64 = 10;

/// Whose budget a request spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// The App itself (JWT): installations, tokens, the delivery log.
    App,
    /// One installation's token.
    Installation(InstallationId),
}

/// GitHub keeps separate budgets for REST (`core`) and GraphQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    Core,
    Graphql,
}

/// One rate-limit budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bucket {
    pub who: Who,
    pub resource: Resource,
}

/// What one installation may still spend in the current window of its
/// scarcest budget (REST or GraphQL), as GitHub last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub remaining: u64,
    /// When the window resets (`x-ratelimit-reset`).
    pub reset: SystemTime,
}

/// What to do before sending a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Go,
    /// Pause this long, then send.
    Pause(Duration),
    /// Do not send; try again after this long.
    Refuse(Duration),
}

/// What one budget is known to hold (primary limit).
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    limit: Option<u64>,
    remaining: Option<u64>,
    reset: Option<u64>,
    blocked_until: Option<SystemTime>,
    /// Below the low-water mark, when the spread's next turn comes (the
    /// theoretical arrival time of a cell-rate pacer): each request sent
    /// moves it one spread on; a request refused leaves it.
    turn: Option<SystemTime>,
}

impl Window {
    /// Takes in what an answer's headers say. Answers to requests sent at
    /// once come back in any order: within one window the count only goes
    /// down, so an answer reporting more than is already known left (it
    /// was counted before requests answered earlier) is stale and must not
    /// raise the count, and an answer from a window that has already reset
    /// says nothing about the current one. An answer naming a reset still
    /// ahead is never ignored, even one sooner than the reset known: the
    /// lower of the two counts is kept, with its reset, so a budget GitHub
    /// reports lower (spent by another reader, another replica) is honoured
    /// at once.
    fn record(&mut self, headers: &RateHeaders, now: SystemTime) {
        let ahead = |reset: u64| !until(reset, now).is_zero();
        match (headers.reset, self.reset) {
            (Some(reported), Some(known)) if reported != known && !ahead(reported) => return,
            (Some(reported), Some(known)) if reported == known || ahead(known) => {
                if let Some(reported_left) = headers.remaining {
                    match self.remaining {
                        Some(left) if left <= reported_left => {}
                        _ => {
                            self.remaining = Some(reported_left);
                            self.reset = Some(reported);
                        }
                    }
                }
            }
            _ => {
                if headers.remaining.is_some() {
                    self.remaining = headers.remaining;
                }
                if headers.reset.is_some() {
                    self.reset = headers.reset;
                }
            }
        }
        if headers.limit.is_some() {
            self.limit = headers.limit;
        }
    }

    fn admit(&mut self, now: SystemTime) -> Admission {
        if let Some(until) = self.blocked_until {
            match until.duration_since(now) {
                Ok(wait) if !wait.is_zero() => return Admission::Refuse(wait),
                _ => self.blocked_until = None,
            }
        }
        let (Some(limit), Some(remaining), Some(reset)) = (self.limit, self.remaining, self.reset)
        else {
            return Admission::Go;
        };
        let left = until(reset, now);
        if left.is_zero() {
            // A new window has begun; the next answer tells its budget.
            self.remaining = None;
            self.turn = None;
            return Admission::Go;
        }
        if remaining == 0 {
            return Admission::Refuse(left);
        }
        if remaining.saturating_mul(100) >= limit.saturating_mul(LOW_WATER_PERCENT) {
            // Count this request now, so concurrent callers pace each other.
            self.remaining = Some(remaining - 1);
            self.turn = None;
            return Admission::Go;
        }
        // Spread what is left over the time left, `LOW_BURST` ahead of the
        // schedule at most: a request whose turn is further off than a
        // pause goes back uncounted, to come again at its turn.
        let spread = left / u32::try_from(remaining).unwrap_or(u32::MAX);
        let ahead = spread * u32::try_from(remaining.min(LOW_BURST) - 1).unwrap_or(0);
        let turn = self.turn.map_or(now, |turn| turn.max(now));
        let wait = turn
            .checked_sub(ahead)
            .and_then(|start| start.duration_since(now).ok())
            .unwrap_or_default();
        if wait > MAX_PAUSE {
            return Admission::Refuse(wait);
        }
        self.remaining = Some(remaining - 1);
        self.turn = Some(turn + spread);
        if wait.is_zero() {
            Admission::Go
        } else {
            Admission::Pause(wait)
        }
    }
}

/// Every bucket's window and every caller's pause, shared by all requests
/// of one GitHub source.
#[derive(Debug, Default)]
pub struct RateLimits {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Primary budgets, one per caller and API.
    windows: HashMap<Bucket, Window>,
    /// Secondary limits: until when each caller sends nothing at all.
    paused: HashMap<Who, SystemTime>,
}

impl State {
    /// Holds what a rate-limit answer in `bucket` asks to hold, for `wait`:
    /// the bucket for a primary limit, every request of its caller for a
    /// secondary one. A longer hold already in place stays.
    fn limit(
        &mut self,
        bucket: Bucket,
        headers: &RateHeaders,
        wait: Duration,
        now: SystemTime,
    ) -> Duration {
        let until = now + wait;
        if headers.is_primary() {
            let window = self.windows.entry(bucket).or_default();
            window.blocked_until = Some(window.blocked_until.map_or(until, |b| b.max(until)));
        } else {
            let paused = self.paused.entry(bucket.who).or_insert(until);
            *paused = (*paused).max(until);
        }
        wait
    }
}

impl RateLimits {
    /// Decides whether a request in `bucket` may go now.
    pub fn admit(&self, bucket: Bucket, now: SystemTime) -> Admission {
        let Ok(mut state) = self.state.lock() else {
            // A poisoned lock only loses pacing, never correctness.
            return Admission::Go;
        };
        if let Some(until) = state.paused.get(&bucket.who).copied() {
            match until.duration_since(now) {
                Ok(wait) if !wait.is_zero() => return Admission::Refuse(wait),
                _ => {
                    state.paused.remove(&bucket.who);
                }
            }
        }
        state.windows.entry(bucket).or_default().admit(now)
    }

    /// Records an answer's headers; returns the wait when it was a rate limit.
    pub fn observe(
        &self,
        bucket: Bucket,
        status: u16,
        headers: &RateHeaders,
        body_mentions_limit: bool,
        now: SystemTime,
    ) -> Option<Duration> {
        let mut state = self.state.lock().ok()?;
        let window = state.windows.entry(bucket).or_default();
        window.record(headers, now);
        if !headers.is_rate_limited(status, body_mentions_limit) {
            return None;
        }
        Some(state.limit(bucket, headers, headers.wait(now), now))
    }

    /// Records a rate limit reported in a body (GraphQL's `RATE_LIMITED`),
    /// with the headers of its answer; returns the wait.
    pub fn limited(&self, bucket: Bucket, headers: &RateHeaders, now: SystemTime) -> Duration {
        let wait = headers.wait(now);
        match self.state.lock() {
            Ok(mut state) => state.limit(bucket, headers, wait, now),
            Err(_) => wait,
        }
    }

    /// When the window of `bucket` resets, if its budget is spent or so
    /// low that requests are spread until then: a rate limit is then a
    /// wait for the budget, not a refusal of the request itself.
    pub fn spent_until(&self, bucket: Bucket, now: SystemTime) -> Option<SystemTime> {
        let state = self.state.lock().ok()?;
        let window = state.windows.get(&bucket)?;
        let (remaining, reset) = (window.remaining?, window.reset?);
        let limit = window.limit.unwrap_or(remaining);
        let low = remaining == 0
            || remaining.saturating_mul(100) < limit.saturating_mul(LOW_WATER_PERCENT);
        let at = UNIX_EPOCH + Duration::from_secs(reset);
        (low && at > now).then_some(at)
    }

    /// `(remaining, limit)` of the installation's bucket with the fewest
    /// requests left, the limit as GitHub reported it: 5,000 an hour is
    /// only the smallest budget; large organisations get more.
    pub fn lowest_budget(&self, installation: InstallationId) -> Option<(u64, u64)> {
        let state = self.state.lock().ok()?;
        state
            .windows
            .iter()
            .filter(|(bucket, _)| bucket.who == Who::Installation(installation))
            .filter_map(|(_, w)| Some((w.remaining?, w.limit.or(w.remaining)?)))
            .min()
    }

    /// Each installation's scarcest budget whose window has not reset by
    /// `now`, for pacing reads by what is really left.
    pub fn installation_budgets(&self, now: SystemTime) -> Vec<(InstallationId, Budget)> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let mut scarcest: HashMap<InstallationId, Budget> = HashMap::new();
        for (bucket, window) in &state.windows {
            let Who::Installation(id) = bucket.who else {
                continue;
            };
            let (Some(remaining), Some(reset)) = (window.remaining, window.reset) else {
                continue;
            };
            let reset = UNIX_EPOCH + Duration::from_secs(reset);
            if reset <= now {
                continue;
            }
            let budget = Budget { remaining, reset };
            scarcest
                .entry(id)
                .and_modify(|b| {
                    if remaining < b.remaining {
                        *b = budget;
                    }
                })
                .or_insert(budget);
        }
        scarcest.into_iter().collect()
    }

    /// The lowest remaining budget known for an installation (for the gauge).
    pub fn remaining(&self, installation: InstallationId) -> Option<u64> {
        let state = self.state.lock().ok()?;
        state
            .windows
            .iter()
            .filter(|(bucket, _)| bucket.who == Who::Installation(installation))
            .filter_map(|(_, window)| window.remaining)
            .min()
    }
}

impl RateLimits {
    /// Counts one request in `bucket` if what is left stays above
    /// `floor(limit)`; otherwise sends nothing and answers when the window
    /// resets. Check and count are one step, so callers running at once
    /// never spend below the floor together. A window no answer has told
    /// yet (or whose reset has passed) is not held.
    pub fn take_above(
        &self,
        bucket: Bucket,
        now: SystemTime,
        floor: impl Fn(u64) -> u64,
    ) -> Result<(), SystemTime> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        let Some(window) = state.windows.get_mut(&bucket) else {
            return Ok(());
        };
        let (Some(remaining), Some(reset)) = (window.remaining, window.reset) else {
            return Ok(());
        };
        let reset = UNIX_EPOCH + Duration::from_secs(reset);
        // The header counts whole seconds: GitHub's window may end up to a
        // second after it says, and a request sent in that second still
        // spends the old window.
        if reset + Duration::from_secs(1) <= now {
            return Ok(());
        }
        let limit = window.limit.unwrap_or(remaining);
        if remaining <= floor(limit) {
            return Err(reset);
        }
        // The request is counted here and again when it is admitted: the
        // next answer's headers set the true count.
        window.remaining = Some(remaining - 1);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
