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
