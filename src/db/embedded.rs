//! A private PostgreSQL for running Roster without setting up a database:
//! when `DATABASE_URL` is unset, `roster serve` starts the system's
//! PostgreSQL binaries on a cluster under `ROSTER_DATA_DIR`.
//!
//! The cluster listens only on a unix socket inside the data folder (no TCP
//! port, so nothing else on the machine can reach it and no port can clash),
//! and trusts local connections: the folder is made private (mode 0700), so
//! only its owner can open the socket. The port number 5432 only names the
//! socket file.
//!
//! PostgreSQL refuses to run as root; when Roster runs as root, the server
//! runs as the `postgres` system user instead.
//!
//! The server is never left behind. `pg_ctl` runs it in a session of its
//! own (so a Ctrl-C meant for Roster does not end it while Roster still
//! drains its work), so it outlives a Roster killed with `kill -9`. Every
//! Roster using the folder holds a shared lock on it (see [`lock`]); the
//! last one to exit stops the server, and one that starts while nobody
//! holds the lock knows that a server still running there was left by a
//! crash. It stops that server (`pg_ctl stop -m fast`) and starts its own
//! rather than adopting it: the leftover runs with the settings, binaries
//! and log of the earlier run, while a server started now runs with this
//! run's, and a fast stop takes well under a second.

mod host;
mod leftover;
mod lock;
mod process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::Connection;
use tokio::process::Command;

use host::{check_reachable, find_bin_dir, prepare_data_dir, run_as_user};
use leftover::LockFile;
use lock::{StartLock, UseLock};
use process::{io_err, log_tail, run};

/// Names the socket file (`.s.PGSQL.5432`) inside our private folder.
const PORT: u16 = 5432;
/// User and database created in the private cluster.
const USER: &str = "roster";
const DATABASE: &str = "roster";
/// Longest path a unix socket address holds (`sun_path`, minus the NUL).
const MAX_SOCKET_PATH: usize = 107;
/// How long `pg_ctl start -w` may wait for the server to accept connections.
const START_TIMEOUT_SECS: &str = "60";
/// How long a process waits while another one starts or stops the server
/// (at worst a leftover's stop and a start, each within `pg_ctl`'s 60 s).
const BUSY_LIMIT: Duration = Duration::from_secs(150);

/// Why the private PostgreSQL could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(
        "PostgreSQL is not installed (no initdb and pg_ctl on PATH or in \
         /usr/lib/postgresql/*/bin): install it (e.g. `apt-get install postgresql`) \
         or set DATABASE_URL to an existing server"
    )]
    NotInstalled,
    #[error(
        "PostgreSQL refuses to run as root and there is no `postgres` system user \
         to run it as: run roster as a normal user or set DATABASE_URL"
    )]
    RootWithoutPostgresUser,
    #[error(
        "the `postgres` system user cannot enter {path} (the private database runs \
         as that user because roster runs as root): make the folder readable by it, \
         choose another ROSTER_DATA_DIR, run roster as a normal user or set DATABASE_URL"
    )]
    Unreachable { path: PathBuf },
    #[error(
        "the database socket path {path} is longer than the {MAX_SOCKET_PATH} bytes a \
         unix socket allows: choose a shorter ROSTER_DATA_DIR or set DATABASE_URL"
    )]
    SocketPathTooLong { path: PathBuf },
    #[error("cannot prepare {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {detail}")]
    Command {
        command: String,
        status: String,
        detail: String,
    },
    #[error("cannot create the `{DATABASE}` database in the private PostgreSQL: {0}")]
    CreateDatabase(#[source] sqlx::Error),
    #[error(
        "another roster process has been starting or stopping the private PostgreSQL \
         in {path} for over {}s: wait for it or end it",
        waited.as_secs()
    )]
    Busy { path: PathBuf, waited: Duration },
}

/// A running private PostgreSQL; call [`EmbeddedPostgres::stop`] when done.
/// Dropped without it (a panic), the server runs on until the next start.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    data_dir: PathBuf,
    pgdata: PathBuf,
    bin_dir: PathBuf,
    run_as: Option<SystemUser>,
    /// Marks this process as a user of the server while it lives.
    users: UseLock,
}

/// The user the server runs as, when Roster runs as root.
#[derive(Debug, Clone, Copy)]
struct SystemUser {
    uid: u32,
    gid: u32,
}

impl EmbeddedPostgres {
    /// Starts (creating on first use) the cluster in `<data_dir>/pgdata` and
    /// makes sure the `roster` database exists.
    pub async fn start(data_dir: &Path) -> Result<EmbeddedPostgres, EmbeddedError> {
        let data_dir = prepare_data_dir(data_dir)?;
        let pgdata = data_dir.join("pgdata");
        let bin_dir = find_bin_dir(&pgdata)?;
        let run_as = run_as_user()?;

        let socket = data_dir.join(format!(".s.PGSQL.{PORT}"));
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(EmbeddedError::SocketPathTooLong { path: socket });
        }
        if let Some(user) = run_as {
            std::os::unix::fs::chown(&data_dir, Some(user.uid), Some(user.gid))
                .map_err(io_err(&data_dir))?;
            check_reachable(&data_dir, user)?;
        }

        let start = StartLock::acquire(&data_dir, BUSY_LIMIT).await?;
        let (users, alone) = UseLock::join(&data_dir, &start)?;
        let pg = EmbeddedPostgres {
            data_dir,
            pgdata,
            bin_dir,
            run_as,
            users,
        };
        if let Err(e) = pg.bring_up(alone).await {
            // Do not leave a server behind that nobody will stop.
            if pg.users.leave(&start)? {
                let _ = pg.stop_server().await;
            }
            return Err(e);
        }
        if alone {
            pg.users.share()?;
        }
        Ok(pg)
    }

    /// Creates the cluster if needed and makes sure a server of this run
    /// serves the `roster` database. `alone`: no other process uses the
    /// folder, so a server running there is a leftover.
    async fn bring_up(&self, alone: bool) -> Result<(), EmbeddedError> {
        if !self.pgdata.join("PG_VERSION").is_file() {
            self.initdb().await?;
        }
        self.write_settings()?;
        match self.postmaster() {
            LockFile::Running(pid) if alone => {
                tracing::warn!(
                    pid,
                    data_dir = %self.data_dir.display(),
                    "a private PostgreSQL left running by an earlier roster process; stopping it"
                );
                self.stop_server().await?;
                self.pg_ctl_start().await?;
            }
            LockFile::Running(_) => {
                tracing::info!(data_dir = %self.data_dir.display(), "private PostgreSQL already running for another roster process; sharing it");
            }
            LockFile::Absent | LockFile::Stale => {
                self.remove_stale_lock_files()?;
                self.pg_ctl_start().await?;
            }
        }
        self.create_database().await
    }

    /// URL of the `roster` database through the private socket.
    pub fn url(&self) -> String {
        self.url_of(DATABASE)
    }

    /// Folder holding the cluster, its socket and `postgres.log`.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Stops the server (fast shutdown: open sessions are ended) unless
    /// another roster process still uses it; that one stops it when done.
    pub async fn stop(self) -> Result<(), EmbeddedError> {
        let start = StartLock::acquire(&self.data_dir, BUSY_LIMIT).await?;
        if !self.users.leave(&start)? {
            tracing::info!(data_dir = %self.data_dir.display(), "private PostgreSQL left running for another roster process");
            return Ok(());
        }
        match self.postmaster() {
            LockFile::Running(_) => self.stop_server().await,
            // Stopped by someone else already: nothing to do.
            LockFile::Absent | LockFile::Stale => Ok(()),
        }
    }

    fn url_of(&self, database: &str) -> String {
        socket_url(&self.data_dir, database)
    }

    /// The server running on our folder, as `postmaster.pid` says.
    fn postmaster(&self) -> LockFile {
        leftover::inspect(&self.pgdata.join("postmaster.pid"), &self.pgdata)
    }

    /// Lock files naming a process that is gone or is no postmaster on our
    /// folder would keep the server from starting.
    fn remove_stale_lock_files(&self) -> Result<(), EmbeddedError> {
        let files = [
            self.pgdata.join("postmaster.pid"),
            self.data_dir.join(format!(".s.PGSQL.{PORT}.lock")),
        ];
        for file in files {
            if leftover::inspect(&file, &self.pgdata) == LockFile::Stale {
                tracing::info!(file = %file.display(), "removing a stale PostgreSQL lock file");
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_err(&file)(e)),
                }
            }
        }
        Ok(())
    }

    async fn initdb(&self) -> Result<(), EmbeddedError> {
        tracing::info!(pgdata = %self.pgdata.display(), "creating the private PostgreSQL cluster");
        let mut cmd = self.command("initdb");
        cmd.arg("-D").arg(&self.pgdata).args([
            "-U",
            USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        run(cmd, "initdb").await?;
        // Our settings live in their own file, rewritten at every start so
        // that a moved data folder still points at the right socket folder.
        let conf = self.pgdata.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).map_err(io_err(&conf))?;
        text.push_str(
            "\n# Written by roster: socket-only settings.\ninclude_if_exists = 'roster.conf'\n",
        );
        std::fs::write(&conf, text).map_err(io_err(&conf))
    }

    fn write_settings(&self) -> Result<(), EmbeddedError> {
        let path = self.pgdata.join("roster.conf");
        let text = format!(
            "# Rewritten by roster at every start.\n\
             listen_addresses = ''\n\
             unix_socket_directories = '{}'\n\
             port = {PORT}\n",
            conf_quote(&self.data_dir.to_string_lossy())
        );
        std::fs::write(&path, text).map_err(io_err(&path))?;
        if let Some(user) = self.run_as {
            std::os::unix::fs::chown(&path, Some(user.uid), Some(user.gid))
                .map_err(io_err(&path))?;
        }
        Ok(())
    }

    async fn pg_ctl_start(&self) -> Result<(), EmbeddedError> {
        let log = self.data_dir.join("postgres.log");
        let mut cmd = self.command("pg_ctl");
        cmd.arg("start")
            .args(["-w", "-t", START_TIMEOUT_SECS])
            .arg("-D")
            .arg(&self.pgdata)
            .arg("-l")
            .arg(&log);
        run(cmd, "pg_ctl start").await.map_err(|e| match e {
            EmbeddedError::Command {
                command,
                status,
                detail,
            } => EmbeddedError::Command {
                command,
                status,
                detail: format!("{detail}; server log {}: {}", log.display(), log_tail(&log)),
            },
            other => other,
        })
    }

    async fn stop_server(&self) -> Result<(), EmbeddedError> {
        let mut cmd = self.command("pg_ctl");
        cmd.arg("stop")
            .args(["-w", "-m", "fast", "-D"])
            .arg(&self.pgdata);
        run(cmd, "pg_ctl stop").await
    }

    async fn create_database(&self) -> Result<(), EmbeddedError> {
        let mut conn = sqlx::PgConnection::connect(&self.url_of("postgres"))
            .await
            .map_err(EmbeddedError::CreateDatabase)?;
        let exists: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
                .bind(DATABASE)
                .fetch_optional(&mut conn)
                .await
                .map_err(EmbeddedError::CreateDatabase)?;
        if exists.is_none() {
            let created = sqlx::query(&format!("CREATE DATABASE {DATABASE}"))
                .execute(&mut conn)
                .await;
            match created {
                Ok(_) => {}
                // Another process created it between our check and now.
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P04") => {}
                Err(e) => return Err(EmbeddedError::CreateDatabase(e)),
            }
        }
        let _ = conn.close().await;
        Ok(())
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        // Run from our folder: the `postgres` user may not enter the
        // caller's working directory.
        cmd.current_dir(&self.data_dir)
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .kill_on_drop(false);
        if let Some(user) = self.run_as {
            cmd.uid(user.uid).gid(user.gid);
        }
        cmd
    }
}

/// URL of `database` through the socket in `data_dir`.
fn socket_url(data_dir: &Path, database: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("host", &data_dir.to_string_lossy())
        .append_pair("port", &PORT.to_string())
        .finish();
    format!("postgres://{USER}@localhost/{database}?{query}")
}

/// Quotes a value for postgresql.conf (backslash escapes, doubled quotes).
fn conf_quote(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\'', "''")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conf_values_should_be_quoted() {
        assert_eq!(conf_quote(r"/tmp/it's\here"), r"/tmp/it''s\\here");
    }

    #[test]
    fn url_should_point_at_the_private_socket() {
        let url = socket_url(Path::new("/srv/roster data"), DATABASE);
        let opts: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        assert_eq!(
            opts.get_socket().map(|p| p.as_path()),
            Some(Path::new("/srv/roster data"))
        );
        assert_eq!(opts.get_port(), PORT);
        assert_eq!(opts.get_username(), USER);
        assert_eq!(opts.get_database(), Some(DATABASE));
    }
}
