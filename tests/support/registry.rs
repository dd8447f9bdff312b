//! The parts a registry runs on (the PostgreSQL queue, the registry's
//! handler, a repository's facts as a listing reports them), from the kit
//! the unit tests in `src` share: [`roster::testing`]. Tests that drive the
//! registry themselves start here; tests that only need rows in place use
//! [`crate::seed`].

pub use roster::testing::*;
