//! The local folder's `teams.yaml`, read into the organisation's directory
//! at start and whenever it changes.
//!
//! Without the file there is no directory: owner checking is off for the
//! folder, as for an installation without `members: read`, so owners read
//! as the files write them (`unchecked`) to every reader. An empty file is
//! a directory with no team.
//!
//! A file that cannot be used (malformed, too large, not a regular file)
//! is logged once per content and recorded on the local account, so the
//! API shows it; the directory keeps what it had.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::teams_file::{self, MAX_TEAMS_FILE_BYTES, TEAMS_FILE};
use crate::directory::{DirectoryDb, TeamsFile};

/// How often the file is looked at.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// What lies at `teams.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    Absent,
    Bytes(Vec<u8>),
    Refused(String),
}

/// Reads `root/teams.yaml` without following a link or blocking on a FIFO,
/// and never more than one byte past the bound.
fn read(root: &Path) -> Found {
    let path = root.join(TEAMS_FILE);
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Absent,
        Err(e) => return Found::Refused(format!("{TEAMS_FILE}: cannot open: {e}")),
    };
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Found::Refused(format!("{TEAMS_FILE}: not a regular file")),
        Err(e) => return Found::Refused(format!("{TEAMS_FILE}: {e}")),
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_TEAMS_FILE_BYTES).unwrap_or(u64::MAX) + 1;
    match file.take(limit).read_to_end(&mut bytes) {
        Ok(_) => Found::Bytes(bytes),
        Err(e) => Found::Refused(format!("{TEAMS_FILE}: cannot read: {e}")),
    }
}

/// What the folder says of its directory.
#[derive(Debug)]
enum Said {
    /// No `teams.yaml`: no directory, owners are not checked.
    Nothing,
    /// The teams and members of its `teams.yaml` (an empty file: none).
    Teams(TeamsFile),
}

/// Why owners of a folder without `teams.yaml` are not checked, as the
/// owners API and the log say it.
pub const NO_TEAMS_FILE: &str = "the folder has no teams.yaml";

/// Reads `teams.yaml` once: what to write, or why not.
fn parse(found: &Found) -> Result<Said, String> {
    match found {
        Found::Absent => Ok(Said::Nothing),
        Found::Bytes(bytes) => teams_file::parse(bytes)
            .map(Said::Teams)
            .map_err(|e| e.to_string()),
        Found::Refused(message) => Err(message.clone()),
    }
}

/// Keeps the local directory in step with `root/teams.yaml` until `stop`.
pub async fn run(
    root: PathBuf,
    directory: DirectoryDb,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut applied: Option<Found> = None;
    loop {
        let root_now = root.clone();
        let found = tokio::task::spawn_blocking(move || read(&root_now))
            .await
            .unwrap_or_else(|e| Found::Refused(format!("{TEAMS_FILE}: {e}")));
        if applied.as_ref() != Some(&found) && sync(&directory, &found).await {
            applied = Some(found);
        }
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    }
}

/// Writes what `found` says; true once it is settled (written, or refused
/// and recorded), false when the database failed and it must be tried again.
async fn sync(directory: &DirectoryDb, found: &Found) -> bool {
    let result = match parse(found) {
        Ok(Said::Nothing) => directory.turn_off_local(NO_TEAMS_FILE).await.map(|()| {
            tracing::info!("no {TEAMS_FILE}: owners are not checked");
        }),
        Ok(Said::Teams(file)) => directory.replace_local(&file).await.map(|()| {
            tracing::info!(
                teams = file.teams.len(),
                members = file.members.len(),
                "local teams read"
            );
        }),
        Err(message) => {
            tracing::warn!(error = %message, "{TEAMS_FILE} refused; the directory keeps what it had");
            directory.record_local_error(&message).await
        }
    };
    match result {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "could not write the local directory; trying again");
            false
        }
    }
}

/// Reads `root/teams.yaml` once and writes it: for tests and `roster` at start.
pub async fn sync_once(root: &Path, directory: &DirectoryDb) -> bool {
    sync(directory, &read(root)).await
}
