//! Test support for the core, compiled only for tests and with the
//! `testing` feature: the queue conformance suites every `WorkQueue` must
//! pass (the in-memory queue here, `PgQueue` in `tests/pg_queue.rs`), the
//! in-memory queue the controller's own tests run on, and a queue whose
//! renewals fail on demand.

pub mod conformance;
pub mod conformance_batch;
pub mod conformance_durability;
pub mod conformance_hints;
pub mod conformance_kit;
pub mod conformance_listing;
pub mod conformance_order;
#[cfg(test)]
pub mod flaky_queue;
pub mod memory_queue;
