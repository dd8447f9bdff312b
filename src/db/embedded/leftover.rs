//! What a PostgreSQL lock file in our folder stands for: a server that
//! still runs on it, or a leftover naming a process that is gone (or that
//! is something else now that its pid was reused).
//!
//! PostgreSQL itself refuses to start while the pid in `postmaster.pid` (or
//! in the socket's `.lock` file) names any live process of its user, and
//! pids are reused quickly in a container or after a reboot: a stale file
//! has to go before the server can start.

use std::path::{Path, PathBuf};

/// What a lock file's first line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum LockFile {
    /// No such file.
    Absent,
    /// A postmaster runs on `pgdata` with this pid.
    Running(u32),
    /// The file names no process, or one that is not a postmaster on
    /// `pgdata`: it can be removed.
    Stale,
}

/// Reads the lock file at `path` (`postmaster.pid`, `.s.PGSQL.5432.lock`)
/// of the cluster in `pgdata`.
pub(super) fn inspect(path: &Path, pgdata: &Path) -> LockFile {
    let Ok(text) = std::fs::read_to_string(path) else {
        return if path.exists() {
            LockFile::Stale
        } else {
            LockFile::Absent
        };
    };
    let pid = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u32>().ok());
    match pid {
        Some(pid) if pid > 0 && is_postmaster_on(pid, pgdata) => LockFile::Running(pid),
        // A file being written has no pid yet; empty or garbage is stale.
        _ => LockFile::Stale,
    }
}

/// Whether `pid` is a live postgres process working in `pgdata` (a
/// postmaster changes into its data folder). Without `/proc` to ask, a live
/// process is taken for one.
fn is_postmaster_on(pid: u32, pgdata: &Path) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be
    // signalled; it sends nothing.
    let alive = unsafe { libc::kill(raw, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !alive {
        return false;
    }
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if !Path::new("/proc/self").exists() {
        return true;
    }
    let comm = std::fs::read_to_string(proc_dir.join("comm")).unwrap_or_default();
    if comm.trim() != "postgres" {
        return false;
    }
    let cwd = std::fs::canonicalize(proc_dir.join("cwd"));
    let pgdata = std::fs::canonicalize(pgdata);
    matches!((cwd, pgdata), (Ok(a), Ok(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_should_be_absent() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            inspect(&dir.path().join("postmaster.pid"), dir.path()),
            LockFile::Absent
        );
    }

    #[test]
    fn a_file_naming_a_dead_or_foreign_process_should_be_stale() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("postmaster.pid");
        for text in [
            // Above Linux's largest pid: no such process.
            "4194304\n/somewhere\n".to_string(),
            // Alive, but this test, not a postmaster on the folder.
            format!("{}\n{}\n", std::process::id(), dir.path().display()),
            String::new(),
            "not a pid\n".to_string(),
        ] {
            std::fs::write(&file, &text).expect("write");
            assert_eq!(inspect(&file, dir.path()), LockFile::Stale, "{text:?}");
        }
    }
}
