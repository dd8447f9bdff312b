//! What pushes touched, as the PostgreSQL queue keeps it with an id's row:
//! two pushes join when the second follows the first; a push that does
//! not follow, any trigger that asks for a full read, and a listing's key
//! drop it (the run reads the repository whole); a push that arrives while
//! the id is claimed belongs to the next run.

use std::collections::BTreeMap;

use crate::support;
use roster::controller::{Enqueue, Trigger, WorkQueue};
use roster::db::one_statement;
use roster::db::queue::{EnqueueRows, PgQueue};
use roster::source::touched_push::TouchedPush;
use roster::source::RepoId;
use sqlx::PgPool;

const ID: RepoId = RepoId(1);

struct Queue {
    queue: PgQueue,
    pool: PgPool,
}

impl std::ops::Deref for Queue {
    type Target = PgQueue;
    fn deref(&self) -> &PgQueue {
        &self.queue
    }
}

async fn fresh() -> Queue {
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let queue = support::registry::queue_with(&pool, std::time::Duration::from_secs(60));
    Queue { queue, pool }
}

fn touched(before: &str, after: &str, paths: &[&str]) -> TouchedPush {
    TouchedPush {
        before: before.to_owned(),
        after: after.to_owned(),
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    }
}

/// A push webhook's enqueue of [`ID`], carrying what it touched.
async fn push(queue: &Queue, push: &TouchedPush) {
    let rows = EnqueueRows::new(vec![Enqueue::because(ID, Trigger::Push)])
        .touched(&BTreeMap::from([(ID, push.encode())]));
    let mut conn = queue.pool.acquire().await.expect("a connection");
    one_statement::execute_one(&mut *conn, &rows)
        .await
        .expect("the enqueue");
}

/// Claims [`ID`]: what its run is told of the push, then ends the claim.
async fn claimed(queue: &Queue) -> Option<TouchedPush> {
    let claim = queue.claim("w").await.expect("claim").expect("the id");
    queue.done(&claim).await.expect("done");
    claim.scope.as_deref().and_then(TouchedPush::decode)
}

#[tokio::test]
async fn pushes_that_follow_each_other_should_join_and_others_should_read_whole() {
    let queue = fresh().await;
    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    assert_eq!(
        claimed(&queue).await,
        Some(touched("a", "b", &["s/x/project.yaml"]))
    );

    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    push(
        &queue,
        &touched("b", "c", &["s/y/project.yaml", "s/x/project.yaml"]),
    )
    .await;
    assert_eq!(
        claimed(&queue).await,
        Some(touched("a", "c", &["s/x/project.yaml", "s/y/project.yaml"])),
        "joined"
    );

    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    push(&queue, &touched("x", "y", &["s/y/project.yaml"])).await;
    assert_eq!(claimed(&queue).await, None, "a gap between the pushes");

    // Together past the bound of paths.
    let many: Vec<String> = (0..60).map(|n| format!("s/{n}/project.yaml")).collect();
    let more: Vec<String> = (60..120).map(|n| format!("s/{n}/project.yaml")).collect();
    let first = TouchedPush {
        before: "a".into(),
        after: "b".into(),
        paths: many,
    };
    let second = TouchedPush {
        before: "b".into(),
        after: "c".into(),
        paths: more,
    };
    push(&queue, &first).await;
    push(&queue, &second).await;
    assert_eq!(claimed(&queue).await, None, "120 paths");
}

#[tokio::test]
async fn a_trigger_asking_for_a_full_read_or_a_listing_should_drop_what_a_push_touched() {
    let queue = fresh().await;
    for why in [
        Trigger::Resync,
        Trigger::Event,
        Trigger::Other,
        Trigger::Push,
    ] {
        push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
        queue
            .enqueue(vec![Enqueue::because(ID, why)])
            .await
            .expect("enqueue");
        assert_eq!(claimed(&queue).await, None, "{why:?}");
    }
    // A listing's hint and a push, in either order: read whole.
    let listing = || Enqueue {
        key: ID,
        hint: Some(b"{}".to_vec()),
        trigger: Trigger::Listing,
    };
    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    queue.enqueue(vec![listing()]).await.expect("enqueue");
    assert_eq!(claimed(&queue).await, None, "push, then listing");
    queue.enqueue(vec![listing()]).await.expect("enqueue");
    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    let claim = queue.claim("w").await.expect("claim").expect("the id");
    assert_eq!(
        (claim.hint.as_deref(), claim.scope.as_deref()),
        (None, None)
    );
    queue.done(&claim).await.expect("done");
}

#[tokio::test]
async fn a_push_arriving_while_claimed_should_belong_to_the_next_run() {
    let queue = fresh().await;
    push(&queue, &touched("a", "b", &["s/x/project.yaml"])).await;
    let first = queue.claim("w").await.expect("claim").expect("the id");
    push(&queue, &touched("b", "c", &["s/y/project.yaml"])).await;
    queue.done(&first).await.expect("done");
    assert_eq!(
        claimed(&queue).await,
        Some(touched("b", "c", &["s/y/project.yaml"]))
    );
}
