//! `scripts/test-database`, which picks the PostgreSQL that `scripts/test`
//! runs against: when the shared server is missing, refuses logins or is
//! full, it starts a private cluster in a temporary folder (and removes it
//! after), and it never edits the machine's configuration.

use std::path::{Path, PathBuf};
use std::process::Command;

use sqlx::Connection;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/test-database")
}

/// What `scripts/test-database start` printed: a private cluster's folder
/// (removed on drop) and the URL to use.
struct Started {
    private_dir: Option<PathBuf>,
    url: String,
    log: String,
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(dir) = &self.private_dir {
            let _ = Command::new(script()).arg("stop").arg(dir).status();
        }
    }
}

/// Runs `start` with the shared server at `shared`.
fn start(shared: &str, min_free: Option<u32>) -> Option<Started> {
    let mut command = Command::new(script());
    command
        .arg("start")
        .env_remove("DATABASE_URL")
        .env("ROSTER_TEST_SHARED_PG", shared);
    if let Some(min_free) = min_free {
        command.env("ROSTER_TEST_MIN_FREE_CONNECTIONS", min_free.to_string());
    }
    let out = command.output().expect("run scripts/test-database");
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        // No PostgreSQL binaries here and no way to install them: the
        // script says so; the test cannot show more on this machine.
        assert!(
            log.contains("scripts/test:"),
            "an unexplained failure: {log}"
        );
        eprintln!("scripts/test-database could not start a private PostgreSQL here: {log}");
        return None;
    }
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .map(str::to_owned)
    };
    Some(Started {
        private_dir: value("TEST_DB_PRIVATE_DIR=").map(PathBuf::from),
        url: value("DATABASE_URL=").expect("a DATABASE_URL line"),
        log,
    })
}

async fn answers(url: &str) -> bool {
    match sqlx::PgConnection::connect(url).await {
        Ok(mut connection) => sqlx::query_scalar::<_, i32>("select 1")
            .fetch_one(&mut connection)
            .await
            .is_ok_and(|one| one == 1),
        Err(_) => false,
    }
}

fn host_port(url: &str) -> String {
    let url = url::Url::parse(url).expect("url");
    format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().expect("port")
    )
}

/// A private cluster the script made, which must be a usable test server.
async fn assert_private(started: &Started, why: &str) -> PathBuf {
    let dir = started
        .private_dir
        .clone()
        .unwrap_or_else(|| panic!("no private cluster; log: {}", started.log));
    assert!(started.log.contains(why), "the reason: {}", started.log);
    assert!(dir.join("data/PG_VERSION").is_file(), "its data in {dir:?}");
    assert!(answers(&started.url).await, "{} answers", started.url);
    dir
}

fn removed(dir: &Path) -> bool {
    !dir.exists()
}

#[tokio::test]
async fn a_missing_shared_server_should_get_a_private_cluster_that_is_removed_after() {
    // Port 1 on loopback: nothing listens there.
    let Some(started) = start("127.0.0.1:1", None) else {
        return;
    };
    let dir = assert_private(&started, "nothing answers on 127.0.0.1:1").await;
    drop(started);
    assert!(removed(&dir), "{dir:?} is removed");
}

#[tokio::test]
async fn a_full_shared_server_or_one_that_refuses_logins_should_be_left_alone() {
    // A first private cluster plays the shared server.
    let Some(shared) = start("127.0.0.1:1", None) else {
        return;
    };
    let address = host_port(&shared.url);

    // It can serve the tests: the script uses it as it is.
    let usable = start(&address, None).expect("start");
    assert_eq!(usable.private_dir, None, "{}", usable.log);
    assert_eq!(host_port(&usable.url), address);

    // Full: fewer free connections than the tests need.
    let full = start(&address, Some(100_000)).expect("start");
    assert_private(&full, "free connections (the tests need 100000)").await;
    assert_ne!(host_port(&full.url), address);

    // Refusing the login of `postgres`: the script does not touch its
    // configuration (the role stays as it is) and starts its own.
    let mut admin = sqlx::PgConnection::connect(&shared.url.replace("postgres@", "root@"))
        .await
        .expect("admin");
    sqlx::query("alter role postgres nologin")
        .execute(&mut admin)
        .await
        .expect("nologin");
    let refused = start(&address, None).expect("start");
    assert_private(&refused, "refuses the login of postgres").await;
    let can_login: bool =
        sqlx::query_scalar("select rolcanlogin from pg_roles where rolname = 'postgres'")
            .fetch_one(&mut admin)
            .await
            .expect("role");
    assert!(
        !can_login,
        "the shared server's roles are left as they were"
    );
}
