//! What a source (GitHub, a local folder) reports about one repository.
//!
//! Sources only observe; the registry handler decides what to do with it.

pub mod dir;
mod partition;
pub mod touched_push;

pub use crate::installation_id::InstallationId;
pub use partition::{Partition, UnknownPartition};

use serde::{Deserialize, Serialize};

crate::numeric_id!(
    /// GitHub's numeric repository id: stable across renames and transfers.
    RepoId
);

impl From<u32> for RepoId {
    fn from(v: u32) -> Self {
        RepoId(i64::from(v))
    }
}

/// The repository as the source sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoInfo {
    pub owner: String,
    pub name: String,
    /// The GitHub App installation that sees it (`None` for local folders).
    pub installation_id: Option<InstallationId>,
    pub default_branch: String,
    /// Where people can look at it (`None` for local folders).
    pub html_url: Option<String>,
}

impl RepoInfo {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// Why a file GitHub calls binary is invalid, when its bytes cannot say
/// better (a NUL has a line and column; other bytes that are not UTF-8
/// are GitHub's judgement alone).
pub const BINARY_MESSAGE: &str = "the file is binary, not UTF-8 text";

/// The project file at the head of the default branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileState {
    /// The repository has no project file at commit `sha` (the head of its
    /// default branch, when the source has commits and the branch one).
    Absent { sha: Option<String> },
    /// The file's bytes at commit `sha` (not yet validated).
    Found { sha: String, bytes: Vec<u8> },
    /// The file exists but cannot be used as text (too large, binary, …),
    /// or, with several files, the set of them cannot be used (more than
    /// the bound of files).
    Unreadable {
        sha: Option<String>,
        message: String,
    },
    /// A file GitHub's GraphQL calls binary (no text) though it is within
    /// the size bound, of Git blob id `blob`. A NUL byte is enough for
    /// that, and a NUL has a line and column: before this is applied the
    /// GitHub source reads the bytes over REST (a [`FileState::Found`]
    /// then) unless the registry already judged this blob. Applied as it
    /// is, the file is invalid as binary; `confirmed` when its bytes were
    /// read and are not UTF-8 text beyond NULs, so that judgement stands
    /// for this blob and the next listing reads nothing.
    Binary {
        sha: String,
        blob: String,
        confirmed: bool,
    },
    /// Project files found by patterns (`ROSTER_PROJECT_FILES` other than
    /// one path), at commit `sha`: at least one, sorted by path. A
    /// repository where no path matches is [`FileState::Absent`].
    Files { sha: String, files: Vec<PathFile> },
    /// Only the project files a push touched ([`TouchedFiles`]).
    Touched(Box<TouchedFiles>),
}

/// Only the project files a push touched, read at commit `sha` (the
/// push's `after`), while the registry holds every other one as of commit
/// `before`. Applied only while the registry still holds `before`; else
/// the repository is read again whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchedFiles {
    pub before: String,
    pub sha: String,
    /// The touched paths found at `sha`, sorted.
    pub files: Vec<PathFile>,
    /// The touched paths not found at `sha`.
    pub gone: Vec<String>,
}

/// One project file among several: where it lies and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathFile {
    /// The path inside the repository, `/`-separated.
    pub path: String,
    pub content: FileContent,
}

/// What one of several project files holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileContent {
    /// The bytes (not yet validated).
    Bytes(Vec<u8>),
    /// Why it cannot be read as a file (a link, too large): a problem line
    /// naming the path, like `a/project.yaml: file: …`.
    Unreadable(String),
    /// GitHub's GraphQL calls it binary (no text) though it is within the
    /// size bound, of Git blob id `blob`: as [`FileState::Binary`] for one
    /// file, the GitHub source reads its bytes over REST before this is
    /// applied (then [`FileContent::Bytes`]) unless the registry judged
    /// this blob already. `judged`: the problem lines that stand for this
    /// blob (its bytes were read and are not UTF-8 text, or the registry
    /// judged it before), so the next listing reads nothing; `None`: it is
    /// applied as binary and read again the next time.
    Binary {
        blob: String,
        judged: Option<String>,
    },
}

impl FileContent {
    /// The problem line of a file at `path` GitHub calls binary, when its
    /// bytes cannot say better.
    pub fn binary_line(path: &str) -> String {
        format!("{path}: file: {BINARY_MESSAGE}")
    }
}

/// One observation of a repository, as a storage call returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Observed {
    /// A definite answer that the repository is gone, archived or no longer
    /// visible: its entries go. `repo` is known when the source still sees it
    /// (archived) and `None` when it does not.
    Removed {
        repo: Option<RepoInfo>,
        reason: String,
    },
    /// The repository exists; `file` says what its project file holds.
    Present { repo: RepoInfo, file: FileState },
}
