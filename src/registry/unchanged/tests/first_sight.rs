use sqlx::PgPool;

use super::*;
use crate::controller::Handler;
use crate::registry::decide::no_file_message;
use crate::registry::{events, known, RegistryHandler};
use crate::testing;

/// Made known by a webhook, then read: written here.
const FIRST: RepoId = RepoId(7);
/// Never known, then read: inserted here.
const NEW: RepoId = RepoId(9);
/// Made known with an event already: left to the long way.
const LONG: RepoId = RepoId(8);

/// Every column of the row but its id, names and times, and which of its
/// times are set: what the long way and this one must agree on, whatever
/// columns are added later.
async fn row(pool: &PgPool, id: RepoId) -> String {
    sqlx::query_scalar(
        "select (to_jsonb(r) - 'id' - 'name' - 'html_url' - 'created_at' - 'updated_at'
                 - 'last_synced_at' - 'observed_at')::text
                || (r.last_synced_at is not null)::text || (r.observed_at is not null)::text
                || (r.updated_at >= r.created_at)::text
         from repositories r where id = $1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .expect("the row")
}

async fn newest_event(pool: &PgPool, id: RepoId) -> (String, String, i64) {
    sqlx::query_as(
        "select kind, message, count from events where repo_id = $1 order by id desc limit 1",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .expect("an event")
}

async fn setup() -> (PgPool, RegistryHandler, String, String) {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let handler = testing::handler(&pool, testing::queue(&pool));
    let fingerprint = handler.fingerprint.as_str().to_owned();
    (pool, handler, fingerprint, no_file_message("project.yaml"))
}

#[tokio::test]
async fn a_first_read_without_a_file_should_write_what_the_long_way_writes() {
    let (pool, handler, fingerprint, message) = setup().await;
    let known = [(FIRST, from_payload("app7")), (LONG, from_payload("app8"))];
    known::ensure_known(&pool, &known).await.expect("known");
    let mut conn = pool.acquire().await.expect("a connection");
    events::record(&mut conn, LONG, "pending", "made known")
        .await
        .expect("an event");
    drop(conn);

    for (id, name) in [(FIRST, "app7"), (NEW, "app9")] {
        let written = settle(
            &pool,
            &NO_FILE_FIRST,
            id,
            &absent(name, "a1"),
            None,
            &fingerprint,
            &message,
        )
        .await
        .expect("the statement");
        assert!(written, "{id} written in one statement");
    }
    let long = settle(
        &pool,
        &NO_FILE_FIRST,
        LONG,
        &absent("app8", "a1"),
        None,
        &fingerprint,
        &message,
    )
    .await
    .expect("the statement");
    assert!(!long, "an event already: left to the long way");
    assert_eq!(
        handler.apply(&LONG, Ok(absent("app8", "a1"))).await,
        Ok("no_file")
    );

    let expected = row(&pool, LONG).await;
    assert!(expected.contains("\"no_file\""), "{expected}");
    for id in [FIRST, NEW] {
        assert_eq!(row(&pool, id).await, expected, "{id}");
        assert_eq!(
            newest_event(&pool, id).await,
            ("no_file".to_owned(), message.clone(), 1),
            "{id}"
        );
    }
    assert_eq!(newest_event(&pool, LONG).await.1, message);
    let names: Vec<(String, Option<String>)> =
        sqlx::query_as("select default_branch, html_url from repositories order by id")
            .fetch_all(&pool)
            .await
            .expect("names");
    assert!(
        names
            .iter()
            .all(|(branch, url)| *branch == info("x").default_branch && url.is_some()),
        "the names read replace the payload's: {names:?}"
    );
    // Read again, the repository settles as any other.
    assert_eq!(
        handler.apply(&FIRST, Ok(absent("app7", "a1"))).await,
        Ok("no_file")
    );
    assert_eq!(newest_event(&pool, FIRST).await.2, 2);
}

#[tokio::test]
async fn a_repository_reconciled_before_should_be_left_to_the_long_way() {
    let (pool, handler, fingerprint, message) = setup().await;
    assert_eq!(
        handler.apply(&FIRST, Ok(absent("app7", "a1"))).await,
        Ok("no_file")
    );
    let version = |pool: PgPool| async move {
        sqlx::query_scalar::<_, String>("select xmin::text from repositories where id = 7")
            .fetch_one(&pool)
            .await
            .expect("the row")
    };
    let before = version(pool.clone()).await;
    let again = settle(
        &pool,
        &NO_FILE_FIRST,
        FIRST,
        &absent("app7", "b2"),
        None,
        &fingerprint,
        &message,
    )
    .await
    .expect("the statement");
    assert!(!again, "no longer pending");
    assert_eq!(version(pool.clone()).await, before, "nothing written");

    // A claim that is not live writes nothing, not even a new row.
    let stale = Claim {
        key: NEW,
        attempts: 0,
        hint: None,
        scope: None,
        trigger: Default::default(),
        token: "not-a-live-claim".to_owned(),
    };
    let claimed = settle(
        &pool,
        &NO_FILE_FIRST,
        NEW,
        &absent("app9", "a1"),
        Some(&stale),
        &fingerprint,
        &message,
    )
    .await
    .expect("the statement");
    assert!(!claimed);
    let rows: i64 = sqlx::query_scalar("select count(*) from repositories where id = 9")
        .fetch_one(&pool)
        .await
        .expect("a count");
    assert_eq!(rows, 0);

    // A file found is never this statement's.
    let file = Observed::Present {
        repo: info("app9"),
        file: FileState::Found {
            sha: "a1".to_owned(),
            bytes: b"name: app\nowner: team\n".to_vec(),
        },
    };
    let found = settle(
        &pool,
        &NO_FILE_FIRST,
        NEW,
        &file,
        None,
        &fingerprint,
        &message,
    )
    .await
    .expect("the statement");
    assert!(!found);
}
