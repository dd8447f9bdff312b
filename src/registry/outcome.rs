//! What one reconcile decided, before the handler writes it, and the
//! decisions every kind of observation shares.

use super::repos::RepoState;
use super::Status;

/// What one reconcile decided, before it is written.
pub(super) struct Decision {
    pub state: RepoState,
    /// Whether the file (or its absence) was applied: moves `last_synced_at`.
    pub synced: bool,
    pub message: String,
    /// Names this repository gave up, which others may be waiting for.
    pub released: Vec<String>,
    /// Names this repository took: a file that depends on one of them may
    /// have been invalid for want of it.
    pub created: Vec<String>,
    /// Whether an entry was created, updated or deleted (for the change log).
    pub entries_changed: bool,
}

/// A file that breaks a rule: entries, `synced_sha` and conflicts are kept
/// as they were, so `synced_sha` still names the commit the entries reflect.
/// `blob` is the file read (none when it could not be): the one a later
/// reconcile compares with, so that an unchanged invalid file posts no new
/// check run.
pub(super) fn invalid(
    old: &RepoState,
    message: String,
    error: String,
    blob: Option<String>,
) -> Decision {
    Decision {
        state: RepoState {
            status: Status::Invalid,
            error: Some(error),
            attempts: 0,
            file_blob: blob,
            ..old.clone()
        },
        synced: false,
        message,
        released: Vec::new(),
        created: Vec::new(),
        entries_changed: false,
    }
}

/// What a reconcile records when a synced repository's file applied again
/// changed nothing (the long way's `applied` says the same, tested there).
pub(super) fn unchanged_message(sha: &str) -> String {
    format!("{} {}: unchanged", Status::Synced, short(sha))
}

/// The abbreviated commit people recognise.
pub(super) fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}
