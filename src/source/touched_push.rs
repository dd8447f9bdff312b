//! What a push that touched project files tells the run that reads it:
//! the commit the registry must hold (`before`), the commit to read
//! (`after`) and the matching paths its commits added, modified or
//! removed. Webhook intake writes it with the id's queue row; the storage
//! reads only those paths at `after` when the registry still holds
//! `before` (docs/architecture.md#pushes-that-touch-project-files).

use serde::{Deserialize, Serialize};

/// The most touched paths one run reads alone; a push (or a chain of
/// pushes) touching more is read whole. The queue joins chains under the
/// same bound (migration 0040).
pub const MAX_TOUCHED_PATHS: usize = 100;

/// The touched project files of a push, or of pushes that follow each
/// other (each one's `before` the previous one's `after`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchedPush {
    /// The commit the push started from.
    pub before: String,
    /// The commit it left the default branch at.
    pub after: String,
    /// The matching paths its commits touched, sorted, each once.
    pub paths: Vec<String>,
}

impl TouchedPush {
    /// As the queue stores it (JSON).
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// What a queue row's bytes say, when they say this (a listing's hint
    /// does not): `None` for anything else.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let touched: Self = serde_json::from_slice(bytes).ok()?;
        let usable = !touched.paths.is_empty()
            && touched.paths.len() <= MAX_TOUCHED_PATHS
            && !touched.before.is_empty()
            && !touched.after.is_empty();
        usable.then_some(touched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_touched_push_should_read_back_as_written_and_nothing_else_should() {
        let touched = TouchedPush {
            before: "a".into(),
            after: "b".into(),
            paths: vec!["services/api/project.yaml".into()],
        };
        assert_eq!(
            TouchedPush::decode(touched.encode().as_bytes()),
            Some(touched)
        );
        let listing = br#"{"read_at":"2026-01-01T00:00:00Z","observed":{"Removed":{"repo":null,"reason":"x"}}}"#;
        assert_eq!(TouchedPush::decode(listing), None);
        assert_eq!(
            TouchedPush::decode(br#"{"before":"a","after":"b","paths":[]}"#),
            None
        );
    }
}
