//! The private PostgreSQL: created on first start, reused afterwards, and
//! started again after a crash left its pid file behind.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use roster::db::embedded::EmbeddedPostgres;
use sqlx::{Connection, PgConnection};

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
