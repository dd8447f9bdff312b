//! The id of a GitHub App installation, in a module of its own below the
//! ones that pass it around (the sources, the directory, the GitHub
//! client), so each can name it without importing another.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A GitHub App installation's numeric id: the repositories it sees form
/// one partition.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(transparent)]
pub struct InstallationId(pub i64);

impl fmt::Display for InstallationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
