//! A NUL in a project file (`description: "a\0b"`, the YAML escape, or the
//! byte itself) on the real binary: `roster check` refuses it at its line
//! and column, the folder source lists the repository as `invalid` there
//! (before, it was not listed at all, and a GitHub repository stayed in
//! `error` for good), the entries registered before are kept; and a
//! database that is not UTF-8 is refused at start.

use crate::support;

use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use sqlx::Connection;
use support::http::get;
use support::server::{eventually, Roster};

const ROSTER: &str = env!("CARGO_BIN_EXE_roster");
const LIMIT: Duration = Duration::from_secs(30);
const GOOD: &str = "name: amp\nowner: team-amp\ndescription: fine\n";
const ESCAPED_NUL: &str = "name: amp\nowner: team-amp\ndescription: \"a\\0b\"\n";
const MESSAGE: &str = "file: contains a NUL character (U+0000), which a project file may not hold";

#[test]
fn roster_check_should_refuse_a_nul_at_its_line_and_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text, at) in [
        ("escaped.yaml", ESCAPED_NUL.as_bytes(), "3:14"),
        ("raw.yaml", b"name: amp\nowner: t\0eam\n".as_slice(), "2:9"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let output = Command::new(ROSTER)
            .arg("check")
            .arg(&path)
            .output()
            .expect("run roster check");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{name}: {stdout}");
        assert_eq!(stdout.trim(), format!("{}:{at}: {MESSAGE}", path.display()));
    }
}

async fn json(roster: &Roster, path: &str) -> Value {
    get(&roster.url(path))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .json()
}

#[tokio::test]
async fn the_folder_source_should_list_a_nul_file_invalid_and_keep_the_entries() {
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = dir.path().join("org");
    for (repo, text) in [
        ("amp", GOOD),
        ("nul", "name: nul\nowner: t\ndescription: \"\\0\"\n"),
    ] {
        std::fs::create_dir_all(org.join(repo)).expect("mkdir");
        std::fs::write(org.join(repo).join("project.yaml"), text).expect("write");
    }
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
    ];
    let roster = Roster::start(&env, dir.path()).await;
    eventually("both listed: amp synced, nul invalid", LIMIT, || async {
        let amp = json(&roster, "/api/v1/repos/local/amp").await;
        let nul = json(&roster, "/api/v1/repos/local/nul").await;
        (amp["status"] == "synced" && nul["status"] == "invalid").then_some(())
    })
    .await;
    let nul = json(&roster, "/api/v1/repos/local/nul").await;
    assert_eq!(nul["error"], format!("project.yaml:3:14: {MESSAGE}"));
    let before = json(&roster, "/api/v1/projects").await;
    assert_eq!(before["items"].as_array().map(Vec::len), Some(1));

    // The attack on a synced repository: its entry stays as it was.
    std::fs::write(org.join("amp/project.yaml"), ESCAPED_NUL).expect("write");
    eventually("amp invalid", LIMIT, || async {
        let amp = json(&roster, "/api/v1/repos/local/amp").await;
        (amp["status"] == "invalid").then_some(())
    })
    .await;
    let amp = json(&roster, "/api/v1/repos/local/amp").await;
    assert_eq!(amp["error"], format!("project.yaml:3:14: {MESSAGE}"));
    assert_eq!(amp["projects"], serde_json::json!(["amp"]));
    assert_eq!(json(&roster, "/api/v1/projects").await, before);
    let page = get(&roster.url("/repos/local/amp")).await.expect("page");
    assert_eq!(page.status, 200);
    assert!(roster.terminate().success(), "clean exit on SIGTERM");
}

#[tokio::test]
async fn a_database_that_is_not_utf8_should_be_refused_at_start() {
    let server = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let run: String = std::env::var("ROSTER_TEST_RUN")
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(16)
        .collect();
    let name = format!("roster_test_{run}_ascii_{:08x}", fastrand::u32(..));
    let mut admin = sqlx::PgConnection::connect(&server).await.expect("admin");
    sqlx::query(&format!(
        "create database {name} encoding 'SQL_ASCII' lc_collate 'C' lc_ctype 'C' template template0"
    ))
    .execute(&mut admin)
    .await
    .expect("a SQL_ASCII database");
    let mut url = url::Url::parse(&server).expect("url");
    url.set_path(&format!("/{name}"));
    let output = Command::new(ROSTER)
        .arg("migrate")
        .env("DATABASE_URL", url.as_str())
        .output()
        .expect("run roster migrate");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "error: DATABASE_URL: the database's encoding is SQL_ASCII; Roster needs a UTF-8 database"
        ),
        "{stderr}"
    );
    let tables: i64 = {
        let mut conn = sqlx::PgConnection::connect(url.as_str())
            .await
            .expect("connect");
        sqlx::query_scalar("select count(*) from pg_tables where schemaname = 'public'")
            .fetch_one(&mut conn)
            .await
            .expect("count")
    };
    assert_eq!(tables, 0, "nothing was created in it");
    let _ = sqlx::query(&format!("drop database {name} with (force)"))
        .execute(&mut admin)
        .await;
}
