//! A local folder's repository id fits in a JavaScript number (below 2^53)
//! for any folder name, and migration 0023 moves the ids written before,
//! wider 64-bit hashes, to the ids the source computes now, in every table
//! that holds one.

use roster::db::testing::fresh_database;
use roster::source::dir::{is_local, repo_id};
use roster::source::RepoId;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

const JS_EXACT: i64 = 1 << 53;

/// The id a folder had before migration 0023.
fn old_id(folder: &str) -> i64 {
    const FLOOR: u64 = 1 << 50;
    let digest = Sha256::digest(format!("local/{folder}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let n = u64::from_be_bytes(first) % ((i64::MAX as u64) - FLOOR);
    (FLOOR + n) as i64
}

fn example_folders() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    let source = roster::source::dir::DirSource::new(root, "project.yaml");
    source.folders().expect("examples/org lists")
}

#[test]
fn every_local_id_should_be_below_2_to_the_53_and_above_github_ids() {
    let mut names = example_folders();
    assert!(names.len() >= 10, "{names:?}");
    let mut rng = fastrand::Rng::with_seed(53);
    for _ in 0..20_000 {
        let len = rng.usize(1..=100);
        names.push((0..len).map(|_| rng.char(..)).collect());
    }
    names.push(String::new());
    for name in &names {
        let RepoId(id) = repo_id(name);
        assert!((1 << 50..JS_EXACT).contains(&id), "{name:?}: {id}");
        assert!(is_local(RepoId(id)));
        assert_eq!(repo_id(name), RepoId(id), "{name:?} is not stable");
    }
    assert!(!is_local(RepoId(1_296_269)));
    assert!(!is_local(RepoId(-1)));
}

async fn ids(pool: &PgPool, sql: &str) -> Vec<i64> {
    sqlx::query_scalar(sql)
        .fetch_all(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[tokio::test]
async fn migration_0023_should_move_every_old_local_id_and_leave_github_ids_alone() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let folders = example_folders();
    let wide: Vec<&String> = folders.iter().filter(|f| old_id(f) >= JS_EXACT).collect();
    assert!(wide.len() >= 5, "the examples should have wide old ids");
    let github = 1_296_269_i64;
    let mut rows: Vec<(i64, String, String)> = folders
        .iter()
        .map(|f| (old_id(f), "local".to_owned(), f.clone()))
        .collect();
    rows.push((github, "octo".to_owned(), "hello".to_owned()));
    for (n, (id, owner, name)) in rows.iter().enumerate() {
        let entry = format!("entry-{n}");
        let version = serde_json::json!({"name": entry, "owner": "team", "repo_id": id});
        sqlx::raw_sql(&format!(
            "insert into repositories (id, owner, name, status, synced_sha, last_synced_at)
                 values ({id}, '{owner}', '{name}', 'synced', 'abc', now());
             insert into entries (name, repo_id, owner, source_sha) values ('{entry}', {id}, 'team', 'abc');
             insert into events (repo_id, kind, message) values ({id}, 'reconcile', 'synced');
             insert into queue (repo_id) values ({id});
             update change_head set seq = seq + 1;
             insert into changes (seq, kind, name, repo, repo_id, sha, cause, after)
                 select seq, 'created', '{entry}', '{owner}/{name}', {id}, 'abc', 'reconcile', '{version}'
                 from change_head;"
        ))
        .execute(&pool)
        .await
        .unwrap_or_else(|e| panic!("seeding {owner}/{name}: {e}"));
    }

    let migration = include_str!("../migrations/0023_local_ids_fit_json.sql");
    for _ in 0..2 {
        sqlx::raw_sql(migration)
            .execute(&pool)
            .await
            .expect("migration 0023 runs, and runs again");
    }

    let mut expected: Vec<i64> = folders.iter().map(|f| repo_id(f).0).collect();
    expected.push(github);
    expected.sort_unstable();
    for table in [
        "select id from repositories order by id",
        "select repo_id from entries order by repo_id",
        "select repo_id from events order by repo_id",
        "select repo_id from queue order by repo_id",
        "select repo_id from changes order by repo_id",
        "select (after->>'repo_id')::bigint from changes order by 1",
    ] {
        assert_eq!(ids(&pool, table).await, expected, "{table}");
    }
    for folder in &folders {
        let id: i64 = sqlx::query_scalar("select id from repositories where name = $1")
            .bind(folder)
            .fetch_one(&pool)
            .await
            .expect("the repository is still there");
        assert_eq!(RepoId(id), repo_id(folder), "{folder}");
    }
}
