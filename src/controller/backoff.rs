//! Per-key exponential backoff with jitter.
//!
//! Defaults (docs/operations.md#settings): 1 s doubling to a cap of 5 minutes, ±20 % jitter, so
//! that keys failing together (a GitHub outage) do not retry in lockstep.

use std::time::Duration;

/// How long a key waits after its n-th consecutive failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
    /// Fraction of the delay added or removed at random (0.2 = ±20 %).
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// The delay before the next attempt after `failures` consecutive failures
    /// (1 for the first failure). Jitter never pushes the delay past `cap`.
    pub fn delay(&self, failures: u32) -> Duration {
        self.delay_with(failures, fastrand::f64())
    }

    /// [`Backoff::delay`] with the random draw given, in `0.0..1.0`.
    pub fn delay_with(&self, failures: u32, draw: f64) -> Duration {
        let exponent = failures.saturating_sub(1).min(40);
        let nominal = self.base.as_secs_f64() * 2f64.powi(exponent as i32);
        let nominal = nominal.min(self.cap.as_secs_f64());
        let factor = 1.0 + self.jitter * (2.0 * draw.clamp(0.0, 1.0) - 1.0);
        Duration::from_secs_f64((nominal * factor).clamp(0.0, self.cap.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_should_double_from_one_second() {
        let b = Backoff::default();
        let no_jitter = 0.5;
        assert_eq!(b.delay_with(1, no_jitter), Duration::from_secs(1));
        assert_eq!(b.delay_with(2, no_jitter), Duration::from_secs(2));
        assert_eq!(b.delay_with(3, no_jitter), Duration::from_secs(4));
        assert_eq!(b.delay_with(9, no_jitter), Duration::from_secs(256));
    }

    #[test]
    fn delay_should_stop_at_five_minutes() {
        let b = Backoff::default();
        assert_eq!(b.delay_with(10, 0.5), Duration::from_secs(300));
        assert_eq!(b.delay_with(u32::MAX, 0.99), Duration::from_secs(300));
    }

    #[test]
    fn jitter_should_stay_within_twenty_percent() {
        let b = Backoff::default();
        assert_eq!(b.delay_with(3, 0.0), Duration::from_secs_f64(3.2));
        assert_eq!(b.delay_with(3, 1.0), Duration::from_secs_f64(4.8));
        for _ in 0..1000 {
            let d = b.delay(4).as_secs_f64();
            assert!((6.4..=9.6).contains(&d), "{d}");
        }
    }

    #[test]
    fn zeroth_failure_should_count_as_the_first() {
        assert_eq!(
            Backoff::default().delay_with(0, 0.5),
            Duration::from_secs(1)
        );
    }
}
