//! What the machine offers the embedded server: the PostgreSQL binaries,
//! the `postgres` system user, and a private data folder it can reach.

use std::path::{Path, PathBuf};

use super::process::io_err;
use super::{EmbeddedError, SystemUser};

/// Creates the folder, makes it private and returns its absolute path
/// (the socket folder setting must be absolute).
pub(super) fn prepare_data_dir(data_dir: &Path) -> Result<PathBuf, EmbeddedError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(data_dir).map_err(io_err(data_dir))?;
    let data_dir = std::fs::canonicalize(data_dir).map_err(io_err(data_dir))?;
    std::fs::set_permissions(&data_dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io_err(&data_dir))?;
    Ok(data_dir)
}

/// The folder holding `initdb` and `pg_ctl`: the version the cluster was
/// created with if it exists, else the first on PATH, else the newest
/// Debian-style install.
pub(super) fn find_bin_dir(pgdata: &Path) -> Result<PathBuf, EmbeddedError> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let debian = Path::new("/usr/lib/postgresql");
    if let Ok(version) = std::fs::read_to_string(pgdata.join("PG_VERSION")) {
        let dir = debian.join(version.trim()).join("bin");
        if has_tools(&dir) {
            return Ok(dir);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(dir) = std::env::split_paths(&path).find(|d| has_tools(d)) {
            return Ok(dir);
        }
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(debian)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((key?, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has_tools(dir))
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, dir)| dir)
        .ok_or(EmbeddedError::NotInstalled)
}

/// `None` for a normal user; the `postgres` system user when we are root.
pub(super) fn run_as_user() -> Result<Option<SystemUser>, EmbeddedError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    postgres_user(&passwd)
        .map(Some)
        .ok_or(EmbeddedError::RootWithoutPostgresUser)
}

/// The `postgres` entry of `passwd` (the text of `/etc/passwd`), unless
/// it is root.
fn postgres_user(passwd: &str) -> Option<SystemUser> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != "postgres" {
            return None;
        }
        let _password = fields.next()?;
        let uid = fields.next()?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        (uid != 0).then_some(SystemUser { uid, gid })
    })
}

/// Each folder above `data_dir` must let the `postgres` user pass through.
pub(super) fn check_reachable(data_dir: &Path, user: SystemUser) -> Result<(), EmbeddedError> {
    use std::os::unix::fs::MetadataExt;
    for dir in data_dir.ancestors().skip(1) {
        let meta = std::fs::metadata(dir).map_err(io_err(dir))?;
        let mode = meta.mode();
        let can_enter = mode & 0o001 != 0
            || (meta.uid() == user.uid && mode & 0o100 != 0)
            || (meta.gid() == user.gid && mode & 0o010 != 0);
        if !can_enter {
            return Err(EmbeddedError::Unreachable {
                path: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_user_should_be_read_from_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      postgres:x:101:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n";
        let user = postgres_user(passwd).unwrap();
        assert_eq!((user.uid, user.gid), (101, 104));
        assert!(postgres_user("root:x:0:0::/root:/bin/sh\n").is_none());
        assert!(postgres_user("postgres:x:0:0::/:/bin/sh\n").is_none());
    }
}
