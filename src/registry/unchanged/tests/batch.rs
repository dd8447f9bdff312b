use sqlx::PgPool;

use super::*;
use crate::controller::{Enqueue, Handler, Trigger, WorkQueue};
use crate::registry::testing::clock;
use crate::registry::{known, RegistryHandler};
use crate::testing;

async fn as_left(pool: &PgPool, id: RepoId, name: &str, since: &str) -> String {
    crate::registry::testing::as_left(pool, id, name, since)
        .await
        .expect("the repository")
}

/// What each case's repository was before the batch, and what the batch
/// reads of it.
enum Before {
    NoFile,
    MadeKnown,
    Unknown,
    Synced,
}

struct Case {
    why: &'static str,
    before: Before,
    read: fn(&str) -> Observed,
}

fn cases() -> Vec<Case> {
    let case = |why, before, read| Case { why, before, read };
    vec![
        case("no file again", Before::NoFile, |n| absent(n, "a1")),
        case(
            "no file, first read of a repository made known",
            Before::MadeKnown,
            |n| absent(n, "a1"),
        ),
        case(
            "no file, first read of an unknown repository",
            Before::Unknown,
            |n| absent(n, "a1"),
        ),
        case("a file again, unchanged", Before::Synced, |n| {
            found(n, "a1", "v1")
        }),
        case("no file at another commit", Before::NoFile, |n| {
            absent(n, "b2")
        }),
        case("a file changed", Before::Synced, |n| found(n, "a1", "v2")),
        case("a file added", Before::NoFile, |n| found(n, "b2", "v1")),
        case("the file gone", Before::Synced, |n| absent(n, "b2")),
        case("a first read finding a file", Before::MadeKnown, |n| {
            found(n, "a1", "v1")
        }),
    ]
}

async fn prepare(pool: &PgPool, long: &RegistryHandler, id: RepoId, name: &str, before: &Before) {
    match before {
        Before::NoFile => {
            assert_eq!(long.apply(&id, Ok(absent(name, "a1"))).await, Ok("no_file"));
        }
        Before::Synced => {
            assert_eq!(
                long.apply(&id, Ok(found(name, "a1", "v1"))).await,
                Ok("synced")
            );
        }
        Before::MadeKnown => {
            let payload = from_payload(name);
            known::ensure_known(pool, &[(id, payload)])
                .await
                .expect("made known");
        }
        Before::Unknown => {}
    }
}

/// Every case twice: one repository through a listing's batch (one statement, or
/// the long way in the batch's transaction), its twin through the long
/// way alone; both must be left alike, and the batch must have applied
/// every one of them.
#[tokio::test]
async fn a_batch_should_leave_each_repository_as_the_long_way_leaves_it() {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let queue = testing::queue(&pool);
    let fast = testing::handler(&pool, queue.clone());
    let long = testing::handler(&pool, testing::queue(&pool)).the_long_way();
    let cases = cases();
    let name = |n: usize, twin: bool| format!("app{n}{}", if twin { "t" } else { "b" });
    let batch_id = |n: usize| RepoId(100 + n as i64);
    let twin_id = |n: usize| RepoId(200 + n as i64);
    for (n, case) in cases.iter().enumerate() {
        prepare(&pool, &long, batch_id(n), &name(n, false), &case.before).await;
        prepare(&pool, &long, twin_id(n), &name(n, true), &case.before).await;
    }
    let since = clock(&pool).await.expect("the time");
    let ids: Vec<RepoId> = (0..cases.len()).map(batch_id).collect();
    queue
        .enqueue(
            ids.iter()
                .map(|id| Enqueue::because(*id, Trigger::Listing))
                .collect(),
        )
        .await
        .expect("enqueued");
    let claims = queue
        .claim_many("worker", ids.len())
        .await
        .expect("claimed");
    assert_eq!(claims.len(), cases.len());
    let states: Vec<Result<Observed, crate::controller::Failure>> = claims
        .iter()
        .map(|c| {
            let n = (c.key.0 - 100) as usize;
            Ok((cases[n].read)(&name(n, false)))
        })
        .collect();
    let outcomes = fast.apply_together(&claims, &states).await;
    for (claim, outcome) in claims.iter().zip(outcomes) {
        let n = (claim.key.0 - 100) as usize;
        let case = &cases[n];
        let Some(applied) = outcome else {
            panic!("{}: left unapplied by the batch", case.why);
        };
        let twin = long
            .apply(&twin_id(n), Ok((case.read)(&name(n, true))))
            .await;
        assert_eq!(Ok(applied.outcome), twin, "{}", case.why);
        assert_eq!(applied.name, Some(format!("acme/{}", name(n, false))));
        let batch = as_left(&pool, batch_id(n), &name(n, false), &since).await;
        let alone = as_left(&pool, twin_id(n), &name(n, true), &since).await;
        assert_eq!(batch, alone, "{}", case.why);
    }
}

/// A claim that is no longer live lets nothing be written together.
#[tokio::test]
async fn a_batch_whose_claims_lapsed_should_write_nothing() {
    let (pool, _url) = testing::fresh_database()
        .await
        .expect("a fresh test database");
    let handler = testing::handler(&pool, testing::queue(&pool));
    let id = RepoId(7);
    assert_eq!(
        handler.apply(&id, Ok(absent("app", "a1"))).await,
        Ok("no_file")
    );
    let stale = Claim {
        key: id,
        attempts: 0,
        hint: None,
        scope: None,
        trigger: Default::default(),
        token: "not-a-live-claim".to_owned(),
    };
    let unknown = Claim {
        key: RepoId(8),
        ..stale.clone()
    };
    let since = clock(&pool).await.expect("the time");
    let before = as_left(&pool, id, "app", &since).await;
    let states = vec![Ok(absent("app", "a1")), Ok(absent("other", "a1"))];
    let outcomes = handler.apply_together(&[stale, unknown], &states).await;
    assert_eq!(outcomes, vec![None, None]);
    assert_eq!(as_left(&pool, id, "app", &since).await, before);
    let rows: i64 = sqlx::query_scalar("select count(*) from repositories where id = 8")
        .fetch_one(&pool)
        .await
        .expect("a count");
    assert_eq!(rows, 0, "no row for a claim that lapsed");
}
