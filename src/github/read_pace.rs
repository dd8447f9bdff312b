//! How fast the GitHub source may read, from what GitHub says is left.
//!
//! For each installation, from its scarcest budget (REST or GraphQL) as the
//! last answer reported it (`x-ratelimit-remaining`, `x-ratelimit-reset`):
//!
//! ```text
//! reserve = pages of its latest listing + a tenth of them
//! spare   = remaining − reserve            (at least 1)
//! every   = time until reset / spare       (at least FASTEST, 1 s)
//! burst   = min(spare, BURST)
//! ```
//!
//! The controller paces every read by the installation whose `every` is
//! the longest, so no installation spends, before its window resets, the
//! reads its next listing needs. Before GitHub has said anything, the
//! fixed [`super::storage::READ_PACE`] applies (docs/performance.md).

use std::time::{Duration, SystemTime};

use super::rate_limit::Budget;
use crate::controller::ReadPace;

/// Reads never go faster than this (the fixed pace), whatever the budget:
/// a trickle's pushes then share reads of up to 100 repositories, each
/// waiting at most about this long, and the hour's budget stays mostly
/// unspent for what comes later.
pub const FASTEST: Duration = Duration::from_secs(1);

/// Reads that may start at once after a quiet spell.
pub const BURST: u32 = 30;

/// What the next listing of an installation needs, from the pages
/// (GraphQL requests) its latest one took.
pub fn reserve(listing_pages: usize) -> u64 {
    let pages = u64::try_from(listing_pages).unwrap_or(u64::MAX);
    pages.saturating_add(pages.div_ceil(10))
}

/// The pace the scarcest of `budgets` (each with its reserve) allows at
/// `now`; `None` when no budget is known.
pub fn from_budgets(
    budgets: impl IntoIterator<Item = (Budget, u64)>,
    now: SystemTime,
) -> Option<ReadPace> {
    budgets
        .into_iter()
        .map(|(budget, reserve)| {
            let left = budget
                .reset
                .duration_since(now)
                .unwrap_or_default()
                .max(Duration::from_secs(1));
            let spare = budget.remaining.saturating_sub(reserve).max(1);
            let every = left / u32::try_from(spare).unwrap_or(u32::MAX);
            ReadPace {
                burst: u32::try_from(spare).unwrap_or(u32::MAX).min(BURST),
                every: every.max(FASTEST),
            }
        })
        .max_by_key(|pace| (pace.every, std::cmp::Reverse(pace.burst)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(remaining: u64, reset_in: u64, now: SystemTime) -> Budget {
        Budget {
            remaining,
            reset: now + Duration::from_secs(reset_in),
        }
    }

    #[test]
    fn a_full_budget_should_spread_what_the_listing_leaves_over_the_window() {
        let now = SystemTime::now();
        // 2,000 left for the hour, a 100-page listing kept in reserve:
        // 1,890 reads.
        let pace = from_budgets([(budget(2_000, 3_600, now), reserve(100))], now);
        assert_eq!(
            pace,
            Some(ReadPace {
                burst: BURST,
                every: Duration::from_secs(3_600) / 1_890,
            })
        );
        // A larger budget than a read a second needs: never beyond that.
        for remaining in [5_000, 12_500, 1_000_000] {
            let pace = from_budgets([(budget(remaining, 3_600, now), reserve(100))], now);
            assert_eq!(pace.map(|p| p.every), Some(FASTEST), "{remaining}");
        }
    }

    #[test]
    fn a_low_budget_should_slow_reads_and_keep_the_listing_reserve() {
        let now = SystemTime::now();
        // 60 left for 30 minutes, 44 of them for the next listing: 16.
        let pace = from_budgets([(budget(60, 1_800, now), reserve(40))], now);
        assert_eq!(
            pace,
            Some(ReadPace {
                burst: 16,
                every: Duration::from_secs(1_800 / 16) + Duration::from_millis(500),
            })
        );
        // Nothing spare: one read for the rest of the window.
        let pace = from_budgets([(budget(10, 600, now), reserve(40))], now);
        assert_eq!(
            pace,
            Some(ReadPace {
                burst: 1,
                every: Duration::from_secs(600),
            })
        );
    }

    #[test]
    fn the_scarcest_installation_should_set_the_pace() {
        let now = SystemTime::now();
        let pace = from_budgets(
            [
                (budget(5_000, 3_600, now), 0),
                (budget(100, 3_600, now), 0),
                (budget(12_500, 3_600, now), 0),
            ],
            now,
        );
        assert_eq!(pace.map(|p| p.every), Some(Duration::from_secs(36)));
        assert_eq!(from_budgets([], now), None);
    }
}
