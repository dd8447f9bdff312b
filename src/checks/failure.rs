//! Why a check's evaluation failed, and how long it waits before the next
//! attempt.

use std::time::{Duration, SystemTime};

use crate::github::http::CallError;

/// Why an evaluation failed.
pub(super) enum Failure {
    /// The budget left is the sync's until then: tried again after it,
    /// without counting as an attempt.
    Held(SystemTime),
    RateLimited(String, Duration),
    Other(String),
}

impl Failure {
    pub(super) fn db(error: crate::registry::RegistryError) -> Self {
        Failure::Other(error.to_string())
    }
}

impl From<CallError> for Failure {
    fn from(error: CallError) -> Self {
        match &error {
            CallError::RateLimited { wait, .. } | CallError::BudgetSpent { wait, .. } => {
                Failure::RateLimited(error.to_string(), *wait)
            }
            _ => Failure::Other(error.to_string()),
        }
    }
}
