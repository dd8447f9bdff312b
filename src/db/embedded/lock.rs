//! Which roster processes use the private PostgreSQL of one data folder, so
//! that the last one out stops the server and a server nobody uses is known
//! to be left over from a crash.
//!
//! Two `flock` locks in the data folder; the kernel drops both when their
//! process ends in any way, `kill -9` included:
//! - `start.lock`, exclusive while a process starts or stops the server, so
//!   that those steps of two processes never interleave;
//! - `users.lock`, shared by every process using the server. Taken
//!   exclusively (under `start.lock`), it tells whether anyone else uses it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::EmbeddedError;

/// Held while this process starts or stops the server.
#[derive(Debug)]
pub(super) struct StartLock {
    _file: File,
}

/// Held (shared) as long as this process uses the server.
#[derive(Debug)]
pub(super) struct UseLock {
    file: File,
    path: PathBuf,
}

/// How often a process waiting for `start.lock` tries again.
const RETRY: Duration = Duration::from_millis(100);

impl StartLock {
    /// Waits (at most `limit`) until no other process starts or stops the
    /// server.
    pub(super) async fn acquire(data_dir: &Path, limit: Duration) -> Result<Self, EmbeddedError> {
        let path = data_dir.join("start.lock");
        let file = open(&path)?;
        let deadline = Instant::now() + limit;
        while !try_flock(&file, libc::LOCK_EX).map_err(io_err(&path))? {
            if Instant::now() >= deadline {
                return Err(EmbeddedError::Busy {
                    path: data_dir.to_path_buf(),
                    waited: limit,
                });
            }
            tokio::time::sleep(RETRY).await;
        }
        Ok(StartLock { _file: file })
    }
}

impl UseLock {
    /// Joins the users of the server; `true` with it when no other process
    /// uses it (the lock is then exclusive until [`UseLock::share`]).
    pub(super) fn join(data_dir: &Path, _start: &StartLock) -> Result<(Self, bool), EmbeddedError> {
        let path = data_dir.join("users.lock");
        let file = open(&path)?;
        let alone = try_flock(&file, libc::LOCK_EX).map_err(io_err(&path))?;
        let lock = UseLock { file, path };
        if !alone {
            lock.share()?;
        }
        Ok((lock, alone))
    }

    /// Lets other processes join. Other users hold the lock only shared
    /// and a process stopping holds `start.lock`, which the caller does:
    /// this cannot wait.
    pub(super) fn share(&self) -> Result<(), EmbeddedError> {
        if try_flock(&self.file, libc::LOCK_SH).map_err(io_err(&self.path))? {
            return Ok(());
        }
        Err(EmbeddedError::Io {
            path: self.path.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "another process holds the lock exclusively",
            ),
        })
    }

    /// Whether this process was the last user; it is no user any more
    /// either way. (A failed upgrade may give the shared lock up anyway:
    /// `flock` converts by unlocking first.)
    pub(super) fn leave(&self, _start: &StartLock) -> Result<bool, EmbeddedError> {
        let last = try_flock(&self.file, libc::LOCK_EX).map_err(io_err(&self.path))?;
        if !last {
            try_flock(&self.file, libc::LOCK_UN).map_err(io_err(&self.path))?;
        }
        Ok(last)
    }
}

fn open(path: &Path) -> Result<File, EmbeddedError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io_err(path))
}

/// `flock(op | LOCK_NB)`: `false` when another open file holds a lock
/// that conflicts.
fn try_flock(file: &File, op: libc::c_int) -> std::io::Result<bool> {
    loop {
        // SAFETY: the descriptor is open for as long as `file` lives, and
        // flock touches nothing but the lock of that open file.
        let rc = unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let error = std::io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(error),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> EmbeddedError + '_ {
    move |source| EmbeddedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn the_last_user_out_should_be_told_so() {
        let dir = tempfile::tempdir().expect("temp dir");
        let start = StartLock::acquire(dir.path(), LIMIT).await.expect("start");
        let (first, alone) = UseLock::join(dir.path(), &start).expect("first");
        assert!(alone);
        first.share().expect("share");
        let (second, alone) = UseLock::join(dir.path(), &start).expect("second");
        assert!(!alone, "the first user still holds its lock");
        assert!(!first.leave(&start).expect("first leaves"));
        assert!(second.leave(&start).expect("second leaves"));
    }

    #[tokio::test]
    async fn a_dropped_user_should_no_longer_count() {
        let dir = tempfile::tempdir().expect("temp dir");
        let start = StartLock::acquire(dir.path(), LIMIT).await.expect("start");
        let (crashed, _) = UseLock::join(dir.path(), &start).expect("join");
        crashed.share().expect("share");
        drop(crashed);
        let (next, alone) = UseLock::join(dir.path(), &start).expect("join again");
        assert!(alone);
        assert!(next.leave(&start).expect("leave"));
    }

    #[tokio::test]
    async fn a_second_starter_should_wait_and_then_give_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        let held = StartLock::acquire(dir.path(), LIMIT).await.expect("start");
        let started = Instant::now();
        let waited = StartLock::acquire(dir.path(), Duration::from_millis(300)).await;
        assert!(
            matches!(waited, Err(EmbeddedError::Busy { .. })),
            "{waited:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(300));
        drop(held);
        StartLock::acquire(dir.path(), LIMIT)
            .await
            .expect("free again");
    }
}
