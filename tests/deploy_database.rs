//! `deploy/postgres/create-database.sql`, run with `psql` as the operations
//! guide says, gives a role that can migrate and run Roster in a database
//! no other role can connect to. Run on the test server under unique names,
//! dropped afterwards.

use std::panic::AssertUnwindSafe;
use std::process::Command;

use futures_util::FutureExt;

use roster::db::testing::DEFAULT_URL;
use sqlx::{Connection, PgConnection};
use url::Url;

/// `server`'s URL with another user and database.
fn url_as(server: &str, user: &str, database: &str) -> String {
    let mut url = Url::parse(server).unwrap_or_else(|e| panic!("{server}: {e}"));
    url.set_username(user).expect("a URL with a user");
    url.set_path(&format!("/{database}"));
    url.to_string()
}

async fn admin(server: &str, sql: &str) {
    let mut conn = PgConnection::connect(&url_as(server, "postgres", "postgres"))
        .await
        .expect("connect as postgres");
    sqlx::raw_sql(sql)
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn the_create_database_script_should_give_a_private_database_roster_can_migrate() {
    let server = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let name = format!("roster_sql_{:012x}", fastrand::u64(..1 << 48));
    let other = format!("{name}_other");
    let script = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("deploy/postgres/create-database.sql"),
    )
    .expect("the script is there");
    let script = script.replace("roster", &name);
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), &script).expect("write the script");

    let ran = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f"])
        .arg(file.path())
        .arg(url_as(&server, "postgres", "postgres"))
        .output();
    let ran = match ran {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("note: psql is not on PATH; the script was not run");
            return;
        }
        Err(e) => panic!("psql: {e}"),
    };
    let outcome = AssertUnwindSafe(async {
        assert!(
            ran.status.success(),
            "psql -f create-database.sql:\n{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        let url = url_as(&server, &name, &name);
        let pool = roster::db::connect_and_migrate(&url)
            .await
            .unwrap_or_else(|e| panic!("migrate as {name}: {e}"));
        let owner: String = sqlx::query_scalar(
            "select tableowner::text from pg_tables where tablename = 'repositories'",
        )
        .fetch_one(&pool)
        .await
        .expect("the registry table exists");
        assert_eq!(owner, name);
        pool.close().await;

        admin(&server, &format!("create role {other} login")).await;
        let refused = PgConnection::connect(&url_as(&server, &other, &name))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.contains("permission denied"), "{refused:?}");
    })
    .catch_unwind()
    .await;
    admin(
        &server,
        &format!("drop database if exists {name} with (force)"),
    )
    .await;
    admin(&server, &format!("drop role if exists {other}")).await;
    admin(&server, &format!("drop role if exists {name}")).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
