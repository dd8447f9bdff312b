//! Spreading the reads that cost the source a request, so that a steady
//! trickle of triggers shares reads instead of paying one each.
//!
//! A worker whose claims need a read (a claim without a hint) takes a
//! token first. Tokens come as a bucket: `burst` at once, then one per
//! `every`. A worker that has to wait for its token keeps its claims and,
//! once the token is there, claims again up to the batch size: whatever
//! arrived while it waited joins the same read. A lone trigger, or a burst
//! within `burst` reads, never waits.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How fast a storage's reads may go, sustained (`every`) and at once
/// (`burst`). See [`super::Storage::read_pace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPace {
    /// Reads that may start at once after a quiet spell.
    pub burst: u32,
    /// Sustained, one read per this long.
    pub every: Duration,
}

/// The token bucket of one controller, shared by its workers (a generic
/// cell rate: `due` is when the bucket will have room for one more token
/// at its sustained rate).
#[derive(Debug)]
pub(super) struct Pacer {
    /// The pace the storage gave first, for when it later says none.
    first: ReadPace,
    due: Mutex<Option<Instant>>,
}

impl Pacer {
    pub(super) fn new(pace: ReadPace) -> Self {
        Self {
            first: pace,
            due: Mutex::new(None),
        }
    }

    /// Reserves the next token at the pace `current` gives now (a source
    /// learns its budget as it goes); how long to wait before the token is
    /// there (zero when it is there now). A reservation is never refused,
    /// so waiting workers are served in the order they asked.
    pub(super) fn reserve(
        &self,
        now: Instant,
        current: impl FnOnce() -> Option<ReadPace>,
    ) -> Duration {
        let pace = current().unwrap_or(self.first);
        let mut due = self
            .due
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let every = pace.every;
        let tolerance = every.saturating_mul(pace.burst.saturating_sub(1));
        let next = due.map_or(now, |d| d.max(now));
        let start = next.checked_sub(tolerance).unwrap_or(now).max(now);
        *due = Some(next + every);
        start - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_should_go_at_once_then_one_read_per_interval() {
        let pacer = Pacer::new(ReadPace {
            burst: 3,
            every: Duration::from_secs(1),
        });
        let now = Instant::now();
        let waits: Vec<Duration> = (0..5).map(|_| pacer.reserve(now, || None)).collect();
        let secs = |s| Duration::from_secs(s);
        assert_eq!(waits, vec![secs(0), secs(0), secs(0), secs(1), secs(2)]);
        // After a quiet spell the whole burst is back, no more.
        let later = now + secs(60);
        let waits: Vec<Duration> = (0..4).map(|_| pacer.reserve(later, || None)).collect();
        assert_eq!(waits, vec![secs(0), secs(0), secs(0), secs(1)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pace_that_slows_down_should_space_the_next_reads_further() {
        let pacer = Pacer::new(ReadPace {
            burst: 1,
            every: Duration::from_secs(1),
        });
        let slow = ReadPace {
            burst: 1,
            every: Duration::from_secs(10),
        };
        let now = Instant::now();
        assert_eq!(pacer.reserve(now, || Some(slow)), Duration::ZERO);
        assert_eq!(pacer.reserve(now, || Some(slow)), Duration::from_secs(10));
        // The storage no longer knows: the first pace again.
        assert_eq!(pacer.reserve(now, || None), Duration::from_secs(20));
        assert_eq!(pacer.reserve(now, || None), Duration::from_secs(21));
    }

    #[tokio::test(start_paused = true)]
    async fn a_steady_pace_within_the_rate_should_never_wait() {
        let pacer = Pacer::new(ReadPace {
            burst: 1,
            every: Duration::from_secs(1),
        });
        let start = Instant::now();
        for n in 0..10 {
            let at = start + Duration::from_secs(n);
            assert_eq!(pacer.reserve(at, || None), Duration::ZERO, "read {n}");
        }
    }
}
