use sqlx::PgPool;

use super::*;
use crate::controller::{Enqueue, Handler, WorkQueue};
use crate::registry::RegistryHandler;
use crate::testing;

const ID: RepoId = RepoId(7);

/// The repository row's version and times, and its events: all stay as
/// they are only when nothing was written.
async fn written(pool: &PgPool) -> (String, String, String, Vec<(String, i64)>) {
    let (xmin, updated, observed): (String, String, String) = sqlx::query_as(
        "select xmin::text, updated_at::text, observed_at::text from repositories where id = $1",
    )
    .bind(ID)
    .fetch_one(pool)
    .await
    .expect("the row");
    let events = sqlx::query_as("select kind, count from events where repo_id = $1 order by id")
        .bind(ID)
        .fetch_all(pool)
        .await
        .expect("the events");
    (xmin, updated, observed, events)
}

/// A handler on a fresh database, with `ID` reconciled the long way to
/// `no_file` at commit `a1`; the fingerprint and message it records.
async fn recorded() -> (PgPool, RegistryHandler, String, String) {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let handler = testing::handler(&pool, testing::queue(&pool));
    let outcome = handler.apply(&ID, Ok(absent("app", "a1"))).await;
    assert_eq!(outcome, Ok("no_file"));
    let fingerprint = handler.fingerprint.as_str().to_owned();
    (pool, handler, fingerprint, "no project.yaml".to_owned())
}

/// [`ID`] through the statement of no file again, without a claim.
async fn again(
    pool: &PgPool,
    observed: &Observed,
    fingerprint: &str,
    message: &str,
) -> Result<bool, sqlx::Error> {
    settle(
        pool,
        &NO_FILE_AGAIN,
        ID,
        observed,
        None,
        fingerprint,
        message,
    )
    .await
}

#[tokio::test]
async fn a_read_finding_the_recorded_no_file_state_should_only_move_its_times() {
    let (pool, handler, fingerprint, message) = recorded().await;
    let (xmin, updated, observed, events) = written(&pool).await;
    assert_eq!(events, vec![("no_file".to_owned(), 1)]);

    let same = absent("app", "a1");
    let settled = again(&pool, &same, &fingerprint, &message).await;
    assert_eq!(settled.ok(), Some(true));
    let (xmin2, updated2, observed2, events2) = written(&pool).await;
    assert_ne!(xmin2, xmin, "the row was written");
    assert_eq!(updated2, updated, "no field changed");
    assert!(
        observed2 > observed,
        "observed again: {observed2} after {observed}"
    );
    assert_eq!(events2, vec![("no_file".to_owned(), 2)]);

    // Through the handler, the same: one more count, the status as it was.
    assert_eq!(handler.apply(&ID, Ok(same)).await, Ok("no_file"));
    let (_, updated3, _, events3) = written(&pool).await;
    assert_eq!(updated3, updated);
    assert_eq!(events3, vec![("no_file".to_owned(), 3)]);
}

/// Why, what was read, the claim, the fingerprint and the message.
type Case<'a> = (
    &'a str,
    Observed,
    Option<&'a Claim<RepoId>>,
    &'a str,
    &'a str,
);

#[tokio::test]
async fn a_read_that_may_change_more_should_write_nothing_here() {
    let (pool, _handler, fingerprint, message) = recorded().await;
    let before = written(&pool).await;
    let stale = Claim {
        key: ID,
        attempts: 0,
        hint: None,
        scope: None,
        trigger: Default::default(),
        token: "not-a-live-claim".to_owned(),
    };
    let file = Observed::Present {
        repo: info("app"),
        file: FileState::Found {
            sha: "a1".to_owned(),
            bytes: b"name: app\nowner: team\n".to_vec(),
        },
    };
    let cases: [Case<'_>; 7] = [
        (
            "another commit",
            absent("app", "b2"),
            None,
            &fingerprint,
            &message,
        ),
        (
            "a rename",
            absent("app2", "a1"),
            None,
            &fingerprint,
            &message,
        ),
        ("a file", file, None, &fingerprint, &message),
        (
            "other settings",
            absent("app", "a1"),
            None,
            "rules 0",
            &message,
        ),
        (
            "another event",
            absent("app", "a1"),
            None,
            &fingerprint,
            "no other.yaml",
        ),
        (
            "a claim not live",
            absent("app", "a1"),
            Some(&stale),
            &fingerprint,
            &message,
        ),
        ("unknown", absent("app", "a1"), None, &fingerprint, &message),
    ];
    for (why, observed, claim, fingerprint, message) in cases {
        let id = if why == "unknown" { RepoId(8) } else { ID };
        let settled = settle(
            &pool,
            &NO_FILE_AGAIN,
            id,
            &observed,
            claim,
            fingerprint,
            message,
        )
        .await;
        assert_eq!(settled.ok(), Some(false), "{why}");
        assert_eq!(written(&pool).await, before, "{why}: nothing written");
    }
}

#[tokio::test]
async fn a_repository_in_another_state_should_write_nothing_here() {
    let (pool, handler, fingerprint, message) = recorded().await;
    let same = absent("app", "a1");
    // Entries it owns (a no_file repository never should, but were it so,
    // the long way removes them).
    let parsed =
        crate::project::parse("project.yaml", b"name: app\nowner: team\n").expect("a valid file");
    crate::registry::testing::write_entries_unchecked(&pool, ID, "a1", &parsed.projects)
        .await
        .expect("entries written");
    let before = written(&pool).await;
    let settled = again(&pool, &same, &fingerprint, &message).await;
    assert_eq!(settled.ok(), Some(false), "entries");
    assert_eq!(written(&pool).await, before);
    // The long way removes them, saying so in its event; the next read
    // records its own event the long way, and the one after settles here.
    assert_eq!(handler.apply(&ID, Ok(same.clone())).await, Ok("no_file"));
    let settled = again(&pool, &same, &fingerprint, &message).await;
    assert_eq!(
        settled.ok(),
        Some(false),
        "the newest event names the deleted entry"
    );
    assert_eq!(handler.apply(&ID, Ok(same.clone())).await, Ok("no_file"));
    let settled = again(&pool, &same, &fingerprint, &message).await;
    assert_eq!(settled.ok(), Some(true));

    // A failed read since: `error`, whatever the commit.
    crate::registry::repos::mark_error(&pool, ID, "GitHub answered 502")
        .await
        .expect("marked");
    let before = written(&pool).await;
    let settled = again(&pool, &same, &fingerprint, &message).await;
    assert_eq!(settled.ok(), Some(false), "error");
    assert_eq!(written(&pool).await, before);
}

#[tokio::test]
async fn a_live_claim_should_let_it_settle() {
    let (pool, handler, fingerprint, message) = recorded().await;
    handler
        .queue
        .enqueue(vec![Enqueue::fresh(ID)])
        .await
        .expect("enqueued");
    let claim = handler
        .queue
        .claim("worker")
        .await
        .expect("claimed")
        .expect("a claim");
    let same = absent("app", "a1");
    let settled = settle(
        &pool,
        &NO_FILE_AGAIN,
        ID,
        &same,
        Some(&claim),
        &fingerprint,
        &message,
    )
    .await;
    assert_eq!(settled.ok(), Some(true));
}

async fn as_left(pool: &PgPool, id: RepoId, name: &str, since: &str) -> String {
    crate::registry::testing::as_left(pool, id, name, since)
        .await
        .expect("the repository")
}

async fn now(pool: &PgPool) -> String {
    crate::registry::testing::clock(pool)
        .await
        .expect("the time")
}

#[tokio::test]
async fn a_file_read_again_unchanged_should_be_settled_as_the_long_way_settles_it() {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let fast = testing::handler(&pool, testing::queue(&pool));
    let long = testing::handler(&pool, testing::queue(&pool)).the_long_way();
    let fingerprint = fast.fingerprint.as_str().to_owned();
    let (a, b) = (RepoId(7), RepoId(8));
    for (id, name) in [(a, "app7"), (b, "app8")] {
        let outcome = long.apply(&id, Ok(found(name, "a1", "v1"))).await;
        assert_eq!(outcome, Ok("synced"), "{name}");
    }
    // Twice: the first adds the `unchanged` event, the second counts it.
    for round in 0..2 {
        let since = now(&pool).await;
        let settled = settle_file(&pool, a, &found("app7", "a1", "v1"), None, &fingerprint).await;
        assert_eq!(settled.ok(), Some(true), "round {round}");
        assert_eq!(
            long.apply(&b, Ok(found("app8", "a1", "v1"))).await,
            Ok("synced")
        );
        let left = as_left(&pool, a, "app7", &since).await;
        assert_eq!(
            left,
            as_left(&pool, b, "app8", &since).await,
            "round {round}"
        );
        assert!(left.contains("synced a1: unchanged"), "{left}");
    }
    // Through the handler, the same way.
    assert_eq!(
        fast.apply(&a, Ok(found("app7", "a1", "v1"))).await,
        Ok("synced")
    );
}

#[tokio::test]
async fn a_file_that_may_change_more_should_be_left_to_the_long_way() {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let handler = testing::handler(&pool, testing::queue(&pool));
    let fingerprint = handler.fingerprint.as_str().to_owned();
    assert_eq!(
        handler.apply(&ID, Ok(found("app", "a1", "v1"))).await,
        Ok("synced")
    );
    let before = written(&pool).await;
    let cases = [
        (
            "another blob",
            found("app", "a1", "v2"),
            fingerprint.as_str(),
        ),
        (
            "another commit",
            found("app", "b2", "v1"),
            fingerprint.as_str(),
        ),
        ("a rename", found("app2", "a1", "v1"), fingerprint.as_str()),
        ("other settings", found("app", "a1", "v1"), "rules 0"),
        ("no file", absent("app", "a1"), fingerprint.as_str()),
    ];
    for (why, observed, fingerprint) in cases {
        let settled = settle_file(&pool, ID, &observed, None, fingerprint).await;
        assert_eq!(settled.ok(), Some(false), "{why}");
        assert_eq!(written(&pool).await, before, "{why}: nothing written");
    }
    // A rename stored by a webhook: the row has the new name, the change
    // log the old one, and only the long way logs the rename.
    crate::registry::known::ensure_known(&pool, &[(ID, info("app2"))])
        .await
        .expect("renamed");
    let before = written(&pool).await;
    let renamed = match found("app", "a1", "v1") {
        Observed::Present { file, .. } => Observed::Present {
            repo: info("app2"),
            file,
        },
        removed => removed,
    };
    let settled = settle_file(&pool, ID, &renamed, None, &fingerprint).await;
    assert_eq!(settled.ok(), Some(false), "a rename not yet logged");
    assert_eq!(written(&pool).await, before);
    // Once the long way has logged it, the same read settles here.
    assert_eq!(handler.apply(&ID, Ok(renamed.clone())).await, Ok("synced"));
    let settled = settle_file(&pool, ID, &renamed, None, &fingerprint).await;
    assert_eq!(settled.ok(), Some(true), "the rename logged");
}
