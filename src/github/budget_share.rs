//! What a reader other than the sync may spend of an installation's
//! GitHub budget: the checks (`crate::checks`) and the directory's whole
//! reads take their share only above the sync's reserve, so a push is
//! never left waiting for the window to reset.
//!
//! Per resource (REST and GraphQL each), such a reader sends nothing while
//! what is left is at or below the larger of half the window's limit and
//! the reads the installation's next listing needs ([`sync_reserve`]),
//! until the window resets. The check and the count are one step
//! ([`super::rate_limit::RateLimits::take_above`]), so readers running at
//! once never spend below the reserve together; a budget no answer has
//! told yet is not held back.

use std::time::SystemTime;

use super::client::Client;
use super::rate_limit::{Bucket, Resource, Who};
use crate::source::InstallationId;

/// Repositories a page of the listing reads (GraphQL, 100 a page).
const LISTING_PAGE: u64 = 100;

/// The requests a resource keeps for the sync: half the window's limit, or
/// the next listing's reads of an installation with `repositories` when
/// that is more.
pub fn sync_reserve(limit: u64, repositories: u64) -> u64 {
    let listing = repositories.div_ceil(LISTING_PAGE) + 1;
    (limit / 2).max(listing)
}

/// Takes one request of `resource` of `installation` (which has
/// `repositories`) for a reader other than the sync; when what is left is
/// at or below the reserve, sends nothing and answers when the window
/// resets.
pub fn take(
    client: &Client,
    installation: InstallationId,
    resource: Resource,
    repositories: u64,
) -> Result<(), SystemTime> {
    let bucket = Bucket {
        who: Who::Installation(installation),
        resource,
    };
    client
        .http
        .limits()
        .take_above(bucket, SystemTime::now(), |limit| {
            sync_reserve(limit, repositories)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_should_be_half_the_limit_or_the_listing_when_larger() {
        assert_eq!(sync_reserve(5_000, 40), 2_500);
        assert_eq!(sync_reserve(5_000, 1_000_000), 10_001);
        assert_eq!(sync_reserve(0, 0), 1);
    }
}
