//! The private PostgreSQL: created on first start, reused afterwards,
//! started again after a crash left its pid file behind, shared by the
//! processes using one folder and never left behind (docs/contract.md#bounds).

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use roster::db::embedded::EmbeddedPostgres;
use serde_json::Value;
use sqlx::{Connection, PgConnection};
use support::http::get;
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);

/// A temp folder the `postgres` system user can enter too (when the tests
/// run as root, the server runs as that user).
fn temp_home() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod temp dir");
    let data_dir = tmp.path().join("data");
    (tmp, data_dir)
}

async fn connect(pg: &EmbeddedPostgres) -> PgConnection {
    PgConnection::connect(&pg.url())
        .await
        .expect("connect to the private PostgreSQL")
}

#[tokio::test]
async fn embedded_postgres_should_keep_its_data_across_restarts() {
    let (_tmp, data_dir) = temp_home();

    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("first start");
    assert!(data_dir.join("pgdata/PG_VERSION").is_file());
    let mut conn = connect(&pg).await;
    let one: i32 = sqlx::query_scalar("select 1")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(one, 1);
    sqlx::query("create table kept (v text)")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("insert into kept values ('still here')")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    pg.stop().await.expect("first stop");

    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("second start");
    let mut conn = connect(&pg).await;
    let v: String = sqlx::query_scalar("select v from kept")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(v, "still here");
    conn.close().await.unwrap();
    pg.stop().await.expect("second stop");

    // The server is gone after stop: the socket no longer answers.
    assert!(PgConnection::connect(&pg_url_after_stop(&data_dir))
        .await
        .is_err());
}

#[tokio::test]
async fn embedded_postgres_should_start_despite_a_stale_pid_file() {
    let (_tmp, data_dir) = temp_home();
    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("first start");
    pg.stop().await.expect("stop");

    // What a killed server leaves behind: a pid file naming a dead process.
    let pid_file = data_dir.join("pgdata/postmaster.pid");
    std::fs::write(&pid_file, format!("4194000\n{}\n", data_dir.display())).unwrap();

    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("start after a crash");
    let mut conn = connect(&pg).await;
    let one: i32 = sqlx::query_scalar("select 1")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(one, 1);
    conn.close().await.unwrap();
    pg.stop().await.expect("stop");
}

fn pg_url_after_stop(data_dir: &std::path::Path) -> String {
    let dir = std::fs::canonicalize(data_dir).unwrap();
    format!(
        "postgres://roster@localhost/roster?host={}&port=5432",
        dir.display()
    )
}

/// The postmasters running on `data_dir`'s cluster: postgres processes
/// working in its `pgdata` whose parent is none of them (backends are
/// children of their postmaster).
fn postmasters(data_dir: &Path) -> Vec<u32> {
    let Ok(pgdata) = std::fs::canonicalize(data_dir.join("pgdata")) else {
        return Vec::new();
    };
    let on_cluster = |pid: u32| {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        comm.trim() == "postgres"
            && std::fs::canonicalize(dir.join("cwd")).is_ok_and(|cwd| cwd == pgdata)
    };
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_whitespace().nth(1)?.parse().ok()
    };
    let mut found: Vec<u32> = std::fs::read_dir("/proc")
        .expect("read /proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&pid| on_cluster(pid))
        // A process gone between the two reads (a backend ending) has no
        // parent left to read: it is no postmaster.
        .filter(|&pid| parent(pid).is_some_and(|up| !on_cluster(up)))
        .collect();
    found.sort_unstable();
    found
}

/// Waits until exactly one postmaster runs on `data_dir`; returns its pid.
async fn one_postmaster(data_dir: &Path) -> u32 {
    eventually("exactly one postmaster", LIMIT, || async {
        match postmasters(data_dir).as_slice() {
            [pid] => Some(*pid),
            _ => None,
        }
    })
    .await
}

/// Waits until no postmaster runs on `data_dir` (one that was told to stop
/// may take a moment to exit after removing its pid file).
async fn no_postmaster(data_dir: &Path) {
    eventually("no postmaster left", LIMIT, || async {
        postmasters(data_dir).is_empty().then_some(())
    })
    .await;
}

async fn select_one(pg: &EmbeddedPostgres) -> i32 {
    let mut conn = connect(pg).await;
    let one: i32 = sqlx::query_scalar("select 1")
        .fetch_one(&mut conn)
        .await
        .expect("select 1");
    conn.close().await.expect("close");
    one
}

#[tokio::test]
async fn embedded_postgres_should_start_despite_a_pid_file_naming_another_live_process() {
    let (_tmp, data_dir) = temp_home();
    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("first start");
    pg.stop().await.expect("stop");
    no_postmaster(&data_dir).await;

    // After a reboot, the pid a crashed server left may belong to anything
    // else of the server's user; PostgreSQL itself refuses to start over
    // such a file.
    let mut other = live_process_of_the_server_user();
    let pid_file = data_dir.join("pgdata/postmaster.pid");
    std::fs::write(
        &pid_file,
        format!("{}\n{}\n", other.id(), data_dir.display()),
    )
    .expect("write pid file");
    let socket_lock = data_dir.join(".s.PGSQL.5432.lock");
    std::fs::write(&socket_lock, format!("{}\n", other.id())).expect("write lock");

    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("start over a reused pid");
    assert_eq!(select_one(&pg).await, 1);
    let running = one_postmaster(&data_dir).await;
    assert_ne!(running, other.id());
    pg.stop().await.expect("stop");
    no_postmaster(&data_dir).await;
    assert!(
        other.try_wait().expect("try_wait").is_none(),
        "the other process was left alone"
    );
    let _ = other.kill();
    let _ = other.wait();
}

/// A long sleep run by the user the server runs as (`postgres` when the
/// tests run as root), so that the server's tools see it alive.
fn live_process_of_the_server_user() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sleep");
    cmd.arg("600");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
        let (uid, gid) = passwd
            .lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.first() == Some(&"postgres"))
            .and_then(|f| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))
            .expect("a postgres user");
        cmd.uid(uid).gid(gid);
    }
    cmd.spawn().expect("spawn sleep")
}

#[tokio::test]
async fn embedded_postgres_should_be_shared_and_stopped_by_its_last_user() {
    let (_tmp, data_dir) = temp_home();
    let first = EmbeddedPostgres::start(&data_dir).await.expect("first");
    let server = one_postmaster(&data_dir).await;
    // A second process on the folder (`roster migrate` while serving).
    let second = EmbeddedPostgres::start(&data_dir).await.expect("second");
    assert_eq!(postmasters(&data_dir), vec![server], "not restarted");

    first.stop().await.expect("first stops");
    assert_eq!(postmasters(&data_dir), vec![server], "still in use");
    assert_eq!(select_one(&second).await, 1);

    second.stop().await.expect("second stops");
    no_postmaster(&data_dir).await;
}

#[tokio::test]
async fn a_server_left_by_a_crashed_process_should_be_stopped_at_the_next_start() {
    let (_tmp, data_dir) = temp_home();
    let crashed = EmbeddedPostgres::start(&data_dir).await.expect("start");
    let mut conn = connect(&crashed).await;
    sqlx::raw_sql("create table kept (v text); insert into kept values ('still here')")
        .execute(&mut conn)
        .await
        .expect("write");
    conn.close().await.expect("close");
    let left = one_postmaster(&data_dir).await;
    // What a crash does: the process is gone without stopping anything.
    drop(crashed);
    assert_eq!(postmasters(&data_dir), vec![left]);

    let pg = EmbeddedPostgres::start(&data_dir).await.expect("restart");
    let running = one_postmaster(&data_dir).await;
    assert_ne!(running, left, "the leftover was stopped, a new one started");
    let mut conn = connect(&pg).await;
    let v: String = sqlx::query_scalar("select v from kept")
        .fetch_one(&mut conn)
        .await
        .expect("read");
    assert_eq!(v, "still here");
    conn.close().await.expect("close");
    pg.stop().await.expect("stop");
    no_postmaster(&data_dir).await;
}

/// The real binary on a tiny `dir:` source, with the private database in
/// `data_dir`.
async fn start_roster(tmp: &Path, data_dir: &Path) -> Roster {
    let env = [
        (
            "ROSTER_SOURCE",
            format!("dir:{}", tmp.join("org").display()),
        ),
        ("ROSTER_DATA_DIR", data_dir.display().to_string()),
    ];
    Roster::start(&env, tmp).await
}

/// The `app` entry once registered.
async fn app_entry(roster: &Roster) -> Value {
    eventually("the app entry", LIMIT, || async {
        let answer = get(&roster.url("/api/v1/projects/app")).await.ok()?;
        answer.status.is_success().then(|| answer.json())
    })
    .await
}

#[tokio::test]
async fn roster_killed_hard_should_not_leave_its_private_postgres_behind() {
    let (tmp, data_dir) = temp_home();
    let repo = tmp.path().join("org/app");
    std::fs::create_dir_all(&repo).expect("mkdir");
    std::fs::write(repo.join("project.yaml"), "name: app\nowner: team-a\n").expect("write");

    let roster = start_roster(tmp.path(), &data_dir).await;
    let registered = app_entry(&roster).await;
    let left = one_postmaster(&data_dir).await;

    roster.kill_hard();
    // That is the crash: the server outlives Roster.
    assert_eq!(postmasters(&data_dir), vec![left]);

    let roster = start_roster(tmp.path(), &data_dir).await;
    let running = one_postmaster(&data_dir).await;
    assert_ne!(running, left, "the leftover was stopped, a new one started");
    assert_eq!(postmasters(&data_dir), vec![running]);
    let entry = app_entry(&roster).await;
    assert_eq!(
        entry["created_at"], registered["created_at"],
        "registered before the crash: {entry}"
    );
    assert!(
        roster
            .logs()
            .contains("left running by an earlier roster process"),
        "{}",
        roster.logs()
    );

    let status = roster.terminate();
    assert!(status.success(), "{status}");
    no_postmaster(&data_dir).await;
}
