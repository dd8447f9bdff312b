//! Tests of the rate limits: budgets learnt from answers, pauses, waits.

use axum::http::HeaderMap;

use super::*;

const CORE: Bucket = Bucket {
    who: Who::Installation(InstallationId(1)),
    resource: Resource::Core,
};

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn headers(limit: u64, remaining: u64, reset: u64) -> RateHeaders {
    RateHeaders {
        limit: Some(limit),
        remaining: Some(remaining),
        reset: Some(reset),
        retry_after: None,
    }
}

#[test]
fn a_fresh_bucket_should_let_requests_go() {
    let limits = RateLimits::default();
    assert_eq!(limits.admit(CORE, at(1000)), Admission::Go);
}

#[test]
fn plenty_left_should_let_requests_go() {
    let limits = RateLimits::default();
    limits.observe(CORE, 200, &headers(5000, 4000, 4600), false, at(1000));
    assert_eq!(limits.admit(CORE, at(1000)), Admission::Go);
    assert_eq!(limits.remaining(InstallationId(1)), Some(3999));
}

#[test]
fn low_budget_should_spread_the_rest_until_the_reset_after_a_burst() {
    let limits = RateLimits::default();
    // 100 left of 5000 (2 %), 100 s to the reset: one request a second,
    // after a burst of LOW_BURST.
    limits.observe(CORE, 200, &headers(5000, 100, 1100), false, at(1000));
    let burst: Vec<Admission> = (0..LOW_BURST)
        .map(|_| limits.admit(CORE, at(1000)))
        .collect();
    assert!(burst.iter().all(|a| *a == Admission::Go), "{burst:?}");
    // Then each request waits its turn, about a second after the last.
    let mut waits = Vec::new();
    while let Admission::Pause(wait) = limits.admit(CORE, at(1000)) {
        waits.push(wait);
    }
    assert!(!waits.is_empty() && waits.len() <= 6, "{waits:?}");
    assert!(
        waits.windows(2).all(|w| w[1] > w[0])
            && waits.iter().all(|w| *w <= MAX_PAUSE)
            && waits[0] <= Duration::from_millis(1_200),
        "{waits:?}"
    );
    // A second later, one more may go.
    assert!(matches!(
        limits.admit(CORE, at(1001)),
        Admission::Pause(w) if w <= MAX_PAUSE
    ));
}

#[test]
fn a_spread_longer_than_the_pause_bound_should_be_handed_back_uncounted() {
    let limits = RateLimits::default();
    // 200 left of 5000, an hour to the reset: 18 s between requests.
    limits.observe(CORE, 200, &headers(5000, 200, 4600), false, at(1000));
    for _ in 0..LOW_BURST {
        assert_eq!(limits.admit(CORE, at(1000)), Admission::Go);
    }
    let left = 200 - LOW_BURST;
    assert_eq!(limits.remaining(InstallationId(1)), Some(left));
    let Admission::Refuse(wait) = limits.admit(CORE, at(1000)) else {
        panic!("the spread puts the next request beyond a pause");
    };
    assert!(
        wait > MAX_PAUSE && wait <= Duration::from_secs(19),
        "{wait:?}"
    );
    // Refusals spend nothing: however often a caller asks, its turn comes.
    for _ in 0..1_000 {
        assert!(matches!(limits.admit(CORE, at(1000)), Admission::Refuse(_)));
    }
    assert_eq!(limits.remaining(InstallationId(1)), Some(left));
    // At its turn it is sent (the spread is taken anew from what is left,
    // so the turn may still hold a short pause).
    let turn = at(1000) + wait;
    assert!(matches!(
        limits.admit(CORE, turn),
        Admission::Go | Admission::Pause(_)
    ));
    assert_eq!(limits.remaining(InstallationId(1)), Some(left - 1));
}

#[test]
fn a_low_budget_should_let_a_request_go_after_a_quiet_spell() {
    let limits = RateLimits::default();
    // 199 of 5000 left, an hour to the reset: GitHub still answers, so a
    // request after a quiet spell is sent at once, however low the budget.
    limits.observe(CORE, 200, &headers(5000, 199, 4600), false, at(1000));
    for n in 0..3 {
        assert_eq!(limits.admit(CORE, at(1000 + n * 600)), Admission::Go);
    }
    // The last point too; only an empty budget waits for the reset.
    limits.observe(CORE, 200, &headers(5000, 1, 4600), false, at(3000));
    assert_eq!(limits.admit(CORE, at(3000)), Admission::Go);
    assert_eq!(
        limits.admit(CORE, at(3000)),
        Admission::Refuse(Duration::from_secs(1600))
    );
}

#[test]
fn an_empty_budget_should_refuse_until_the_reset_then_go() {
    let limits = RateLimits::default();
    limits.observe(CORE, 200, &headers(5000, 0, 1030), false, at(1000));
    assert_eq!(
        limits.admit(CORE, at(1000)),
        Admission::Refuse(Duration::from_secs(30))
    );
    assert_eq!(limits.admit(CORE, at(1031)), Admission::Go);
}

#[test]
fn a_secondary_limit_should_block_for_retry_after() {
    let limits = RateLimits::default();
    let answer = RateHeaders {
        retry_after: Some(42),
        ..headers(5000, 4000, 4600)
    };
    let wait = limits.observe(CORE, 403, &answer, false, at(1000));
    assert_eq!(wait, Some(Duration::from_secs(42)));
    assert_eq!(
        limits.admit(CORE, at(1010)),
        Admission::Refuse(Duration::from_secs(32))
    );
    assert_eq!(limits.admit(CORE, at(1042)), Admission::Go);
}

#[test]
fn a_429_without_headers_should_wait_a_minute() {
    let limits = RateLimits::default();
    let wait = limits.observe(CORE, 429, &RateHeaders::default(), false, at(1000));
    assert_eq!(wait, Some(Duration::from_secs(60)));
}

#[test]
fn a_primary_limit_403_should_wait_until_the_reset() {
    let limits = RateLimits::default();
    let wait = limits.observe(CORE, 403, &headers(5000, 0, 1300), false, at(1000));
    assert_eq!(wait, Some(Duration::from_secs(300)));
}

#[test]
fn a_403_that_is_not_a_rate_limit_should_not_block() {
    let limits = RateLimits::default();
    assert_eq!(
        limits.observe(CORE, 403, &headers(5000, 4000, 4600), false, at(1000)),
        None
    );
    assert_eq!(limits.admit(CORE, at(1000)), Admission::Go);
}

const GRAPHQL: Bucket = Bucket {
    who: Who::Installation(InstallationId(1)),
    resource: Resource::Graphql,
};

const OTHER: Bucket = Bucket {
    who: Who::Installation(InstallationId(2)),
    resource: Resource::Core,
};

const APP: Bucket = Bucket {
    who: Who::App,
    resource: Resource::Core,
};

fn secondary(retry_after: u64) -> RateHeaders {
    RateHeaders {
        retry_after: Some(retry_after),
        ..headers(5000, 4000, 4600)
    }
}

#[test]
fn a_secondary_limit_should_pause_every_request_of_the_installation() {
    let limits = RateLimits::default();
    let wait = limits.observe(CORE, 403, &secondary(3), true, at(1000));
    assert_eq!(wait, Some(Duration::from_secs(3)));
    for bucket in [CORE, GRAPHQL] {
        assert_eq!(
            limits.admit(bucket, at(1001)),
            Admission::Refuse(Duration::from_secs(2)),
            "{bucket:?}"
        );
    }
    // Other tokens are not paused.
    assert_eq!(limits.admit(OTHER, at(1001)), Admission::Go);
    assert_eq!(limits.admit(APP, at(1001)), Admission::Go);
    // Over once the wait is.
    assert_eq!(limits.admit(GRAPHQL, at(1003)), Admission::Go);
    assert_eq!(limits.admit(CORE, at(1003)), Admission::Go);
}

#[test]
fn a_primary_limit_should_hold_only_its_own_budget() {
    let limits = RateLimits::default();
    let wait = limits.observe(CORE, 403, &headers(5000, 0, 1300), true, at(1000));
    assert_eq!(wait, Some(Duration::from_secs(300)));
    assert_eq!(
        limits.admit(CORE, at(1000)),
        Admission::Refuse(Duration::from_secs(300))
    );
    // GraphQL has a budget of its own.
    assert_eq!(limits.admit(GRAPHQL, at(1000)), Admission::Go);
}

#[test]
fn a_graphql_rate_limited_error_with_budget_left_should_pause_rest_too() {
    let limits = RateLimits::default();
    let wait = limits.limited(GRAPHQL, &headers(5000, 4000, 4600), at(1000));
    assert_eq!(wait, Duration::from_secs(60));
    assert_eq!(
        limits.admit(CORE, at(1000)),
        Admission::Refuse(Duration::from_secs(60))
    );
    assert_eq!(limits.admit(OTHER, at(1000)), Admission::Go);
}

#[test]
fn a_graphql_rate_limited_error_with_its_budget_spent_should_hold_only_graphql() {
    let limits = RateLimits::default();
    limits.observe(GRAPHQL, 200, &headers(5000, 0, 1300), false, at(1000));
    let wait = limits.limited(GRAPHQL, &headers(5000, 0, 1300), at(1000));
    assert_eq!(wait, Duration::from_secs(300));
    assert_eq!(
        limits.admit(GRAPHQL, at(1000)),
        Admission::Refuse(Duration::from_secs(300))
    );
    assert_eq!(limits.admit(CORE, at(1000)), Admission::Go);
}

#[test]
fn a_later_shorter_pause_should_not_cut_a_longer_one() {
    let limits = RateLimits::default();
    limits.observe(CORE, 429, &secondary(60), false, at(1000));
    limits.observe(GRAPHQL, 403, &secondary(3), true, at(1000));
    assert_eq!(
        limits.admit(CORE, at(1010)),
        Admission::Refuse(Duration::from_secs(50))
    );
}

#[test]
fn an_absurd_retry_after_should_be_bounded() {
    let limits = RateLimits::default();
    let wait = limits.observe(CORE, 429, &secondary(u64::MAX), false, at(1000));
    assert_eq!(wait, Some(MAX_WAIT));
    assert_eq!(limits.admit(GRAPHQL, at(1000)), Admission::Refuse(MAX_WAIT));
}

#[test]
fn a_spent_budget_should_say_when_it_resets_and_a_secondary_limit_should_not() {
    let limits = RateLimits::default();
    limits.observe(CORE, 200, &headers(15000, 0, 1300), false, at(1000));
    assert_eq!(limits.spent_until(CORE, at(1000)), Some(at(1300)));
    assert_eq!(
        limits.spent_until(CORE, at(1300)),
        None,
        "the window is over"
    );
    assert_eq!(limits.lowest_budget(InstallationId(1)), Some((0, 15000)));

    let other = RateLimits::default();
    let secondary = RateHeaders {
        retry_after: Some(30),
        ..headers(15000, 14000, 1300)
    };
    assert!(other
        .observe(CORE, 403, &secondary, false, at(1000))
        .is_some());
    assert_eq!(other.spent_until(CORE, at(1000)), None);
    assert_eq!(other.lowest_budget(InstallationId(1)), Some((14000, 15000)));
}

#[test]
fn headers_should_parse_from_an_answer() {
    let mut map = HeaderMap::new();
    map.insert("x-ratelimit-limit", "15000".parse().unwrap());
    map.insert("x-ratelimit-remaining", "14996".parse().unwrap());
    map.insert("x-ratelimit-reset", "1659645535".parse().unwrap());
    map.insert("retry-after", "7".parse().unwrap());
    assert_eq!(
        RateHeaders::from_headers(&map),
        RateHeaders {
            limit: Some(15000),
            remaining: Some(14996),
            reset: Some(1659645535),
            retry_after: Some(7)
        }
    );
}

#[test]
fn a_stale_answer_should_not_raise_what_is_left_in_its_window() {
    let limits = RateLimits::default();
    let floor = |_| 200;
    limits.observe(CORE, 200, &headers(5000, 202, 4600), false, at(1000));
    // Two requests leave at once; each is counted before it is sent.
    assert_eq!(limits.take_above(CORE, at(1000), floor), Ok(()));
    assert_eq!(limits.take_above(CORE, at(1000), floor), Ok(()));
    assert!(limits.take_above(CORE, at(1000), floor).is_err());
    // An answer to a request sent before them arrives last, reporting 202:
    // the count stays where the two sends left it, and nothing more goes.
    limits.observe(CORE, 200, &headers(5000, 202, 4600), false, at(1000));
    assert!(
        limits.take_above(CORE, at(1000), floor).is_err(),
        "a stale answer let a request spend below the floor"
    );
    // An answer from the window before says nothing about this one.
    limits.observe(CORE, 200, &headers(5000, 4999, 1000), false, at(1000));
    assert!(limits.take_above(CORE, at(1000), floor).is_err());
    // A new window's answer sets the count afresh.
    limits.observe(CORE, 200, &headers(5000, 5000, 8200), false, at(4601));
    assert_eq!(limits.take_above(CORE, at(4601), floor), Ok(()));
}

#[test]
fn a_lower_count_in_a_window_that_resets_sooner_should_be_honoured() {
    let limits = RateLimits::default();
    let floor = |limit: u64| limit / 2;
    limits.observe(CORE, 200, &headers(5000, 4000, 4600), false, at(1000));
    // GitHub now reports 1,200 left in a window resetting in 165 s.
    limits.observe(CORE, 200, &headers(5000, 1200, 1165), false, at(1000));
    assert_eq!(limits.take_above(CORE, at(1000), floor), Err(at(1165)));
    // An answer sent before that one, naming the later reset, arrives
    // last: it does not raise the count again.
    limits.observe(CORE, 200, &headers(5000, 3990, 4600), false, at(1000));
    assert_eq!(limits.take_above(CORE, at(1000), floor), Err(at(1165)));
}
