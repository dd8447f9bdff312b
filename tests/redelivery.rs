//! Recovery of missed webhook deliveries (docs/contract.md#webhooks) against the fake
//! GitHub's delivery log and a real PostgreSQL (a fresh database per test):
//! exactly the events no attempt delivered, and that Roster never received,
//! are asked for once; what was asked shows in the deliveries list.

use crate::support;
use crate::support::registry::{installed_repo, queue};
use support::fake_github;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_github::hook_deliveries::HookDelivery;
use fake_github::{routes, FakeGithub, Fault, FaultKind};
use prometheus_client::registry::Registry;
use roster::db::testing::fresh_database;
use roster::github::GithubSource;
use roster::intake::deliveries::{record, NewDelivery};
use roster::intake::redelivery::{
    recover_missed, run_redelivery_loop, take_turn, RedeliveryError, OUTCOME_REQUESTED, WINDOW,
};
use roster::intake::retention::{prune, Retention, DEFAULT_RETENTION};
use roster::intake::{list_deliveries, DeliveryRecord, WebhookLimits, WebhookState};
use roster::metrics::Metrics;
use roster::registry::ensure_known;
use roster::source::RepoId;
use roster::web::router::webhook as router;
use secrecy::SecretString;
use sqlx::PgPool;

const SECRET: &str = "redelivery test secret";
const HOUR: Duration = Duration::from_secs(3600);

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    source: GithubSource,
    metrics: Arc<Metrics>,
}

/// A fake GitHub with installation 1 (`acme`), a fresh database, and a
/// source connected to both.
async fn env() -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let source = GithubSource::connect(
        &fake.settings(),
        "project.yaml",
        pool.clone(),
        metrics.clone(),
    )
    .await
    .expect("connect");
    Env {
        fake,
        pool,
        source,
        metrics,
    }
}

async fn remember(pool: &PgPool, id: i64, name: &str) {
    let info = installed_repo("acme", name, 1);
    ensure_known(pool, &[(RepoId(id), info)])
        .await
        .expect("seed the registry");
}

async fn deliveries(pool: &PgPool) -> Vec<DeliveryRecord> {
    list_deliveries(pool, 1000, None, None)
        .await
        .expect("the deliveries list")
        .items
}

fn set<T: Ord + Clone>(items: &[T]) -> BTreeSet<T> {
    items.iter().cloned().collect()
}

/// Polls `condition` until it holds or `within` passes.
async fn eventually<F, Fut>(within: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if condition().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition().await
}

#[tokio::test]
async fn only_missed_deliveries_should_be_asked_for_and_only_once() {
    let env = env().await;
    remember(&env.pool, 501, "checkout").await;
    let fake = &env.fake;
    let lost = fake.log_delivery(HookDelivery::new("push", 0).installation(1).repository(501));
    let broken = fake.log_delivery(
        HookDelivery::new("installation_repositories", 500)
            .action("added")
            .installation(1),
    );
    let unavailable = fake.log_delivery(HookDelivery::new("repository", 503).action("renamed"));
    let fine = fake.log_delivery(HookDelivery::new("push", 200));
    let saved = fake.log_delivery(HookDelivery::new("push", 502).age(2 * HOUR));
    fake.log_redelivery(&saved.guid, 202, HOUR);
    let old = fake.log_delivery(HookDelivery::new("push", 500).age(WINDOW + HOUR));
    let received = fake.log_delivery(HookDelivery::new("push", 500));
    record(
        &env.pool,
        &NewDelivery {
            id: &received.guid,
            event: "push",
            action: None,
            repo: None,
            outcome: "queued",
        },
    )
    .await
    .expect("record a received delivery");

    let pass = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");

    let asked = [&lost, &broken, &unavailable];
    assert_eq!(
        set(&fake.redelivery_requests()),
        asked.iter().map(|d| d.id).collect(),
        "asked for exactly the missed deliveries"
    );
    assert_eq!(fake.redelivery_requests().len(), 3, "each once");
    assert_eq!(
        set(&pass.requested),
        asked.iter().map(|d| d.guid.clone()).collect()
    );
    assert!(
        pass.failed.is_empty() && pass.refused.is_empty(),
        "{pass:?}"
    );

    let listed = deliveries(&env.pool).await;
    let flagged: BTreeSet<String> = listed
        .iter()
        .filter(|d| d.redelivery_requested)
        .map(|d| d.id.clone())
        .collect();
    assert_eq!(flagged, asked.iter().map(|d| d.guid.clone()).collect());
    let row = |guid: &str| listed.iter().find(|d| d.id == guid).cloned();
    let lost_row = row(&lost.guid).expect("the lost delivery is listed");
    assert_eq!(lost_row.outcome, OUTCOME_REQUESTED);
    assert_eq!(lost_row.event, "push");
    assert_eq!(lost_row.repo.as_deref(), Some("acme/checkout"));
    let broken_row = row(&broken.guid).expect("the broken delivery is listed");
    assert_eq!(broken_row.action.as_deref(), Some("added"));
    let received_row = row(&received.guid).expect("the received delivery is listed");
    assert!(!received_row.redelivery_requested);
    assert_eq!(received_row.outcome, "queued");
    for untouched in [&fine, &saved, &old] {
        assert!(row(&untouched.guid).is_none(), "{untouched:?}");
    }

    let again = recover_missed(&env.source, &env.pool)
        .await
        .expect("a second pass");
    assert!(again.requested.is_empty(), "{again:?}");
    assert_eq!(fake.redelivery_requests().len(), 3, "nothing asked again");
}

#[tokio::test]
async fn pruning_with_the_default_retention_should_keep_every_row_a_pass_reads() {
    let env = env().await;
    let fake = &env.fake;
    // GitHub logged a failure nearly 3 days ago (Roster answered 400, and
    // recorded it as rejected), and another one Roster asked for then.
    let rejected = fake.log_delivery(HookDelivery::new("push", 400).age(WINDOW - HOUR));
    let asked = fake.log_delivery(HookDelivery::new("push", 0).age(WINDOW - HOUR));
    record(
        &env.pool,
        &NewDelivery {
            id: &rejected.guid,
            event: "push",
            action: None,
            repo: None,
            outcome: "rejected",
        },
    )
    .await
    .expect("record the rejected delivery");
    let first = recover_missed(&env.source, &env.pool)
        .await
        .expect("a first pass");
    assert_eq!(first.requested, vec![asked.guid.clone()]);
    // Both rows as old as GitHub's log says, and one row past the retention.
    sqlx::query("update deliveries set at = now() - make_interval(secs => $1)")
        .bind((WINDOW - HOUR).as_secs_f64())
        .execute(&env.pool)
        .await
        .expect("age the rows");
    sqlx::query(
        "insert into deliveries (id, event, outcome, at)
         values ('eight-days-old', 'push', 'queued', now() - interval '8 days')",
    )
    .execute(&env.pool)
    .await
    .expect("an old row");

    let pruned = prune(&env.pool, &Retention::new(DEFAULT_RETENTION))
        .await
        .expect("prune");
    assert_eq!((pruned.too_old, pruned.over_the_cap), (1, 0));
    let kept: BTreeSet<String> = deliveries(&env.pool)
        .await
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(kept, set(&[rejected.guid.clone(), asked.guid.clone()]));

    let again = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass after pruning");
    assert!(again.requested.is_empty(), "{again:?}");
    assert_eq!(fake.redelivery_requests().len(), 1, "nothing asked again");
}

#[tokio::test]
async fn the_log_should_be_read_across_pages_until_it_is_older_than_the_window() {
    let env = env().await;
    let fake = &env.fake;
    let minute = Duration::from_secs(60);
    // Newest first: 100 + 100 + (52 recent, 48 old) + 100 old; one missed
    // delivery on each recent page, the others delivered.
    let spanning = fake.log_delivery(HookDelivery::new("push", 0).age(minute * 245 + minute / 2));
    fake.log_redelivery(&spanning.guid, 200, minute / 2);
    let mut missed = BTreeSet::new();
    for i in 1..=250 {
        let status = if matches!(i, 50 | 150 | 240) {
            500
        } else {
            200
        };
        let logged = fake.log_delivery(HookDelivery::new("push", status).age(minute * i));
        if status == 500 {
            missed.insert(logged.id);
        }
    }
    for i in 1..=148 {
        fake.log_delivery(HookDelivery::new("push", 500).age(WINDOW + minute * i));
    }

    let pass = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");

    assert_eq!(pass.read, 252);
    assert_eq!(set(&fake.redelivery_requests()), missed);
    assert_eq!(pass.requested.len(), 3, "{pass:?}");
    assert_eq!(
        fake.count(routes::HOOK_DELIVERIES),
        3,
        "stops at the first page that reaches past the window"
    );
    let flagged = deliveries(&env.pool)
        .await
        .iter()
        .filter(|d| d.redelivery_requested)
        .count();
    assert_eq!(flagged, 3);
}

#[tokio::test]
async fn a_failing_log_should_record_nothing_and_be_read_again_next_pass() {
    let env = env().await;
    let lost = env.fake.log_delivery(HookDelivery::new("push", 0));
    env.fake
        .inject(Fault::next(FaultKind::ServerError, 1).on(routes::HOOK_DELIVERIES));

    let failed = recover_missed(&env.source, &env.pool).await;

    assert!(
        matches!(failed, Err(RedeliveryError::LogRefused { status: 500, .. })),
        "{failed:?}"
    );
    assert!(env.fake.redelivery_requests().is_empty());
    assert!(deliveries(&env.pool).await.is_empty());

    let pass = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");
    assert_eq!(pass.requested, vec![lost.guid.clone()]);
    assert_eq!(env.fake.redelivery_requests(), [lost.id]);
}

#[tokio::test]
async fn a_garbled_log_should_be_an_error_not_a_crash() {
    let env = env().await;
    env.fake.log_delivery(HookDelivery::new("push", 0));
    env.fake
        .inject(Fault::next(FaultKind::Garbage, 1).on(routes::HOOK_DELIVERIES));

    let failed = recover_missed(&env.source, &env.pool).await;

    assert!(
        matches!(failed, Err(RedeliveryError::LogUnreadable(_))),
        "{failed:?}"
    );
    assert!(deliveries(&env.pool).await.is_empty());
}

#[tokio::test]
async fn a_request_that_failed_should_be_asked_again_next_pass() {
    let env = env().await;
    let first = env
        .fake
        .log_delivery(HookDelivery::new("push", 0).age(2 * HOUR));
    let second = env
        .fake
        .log_delivery(HookDelivery::new("push", 0).age(HOUR));
    env.fake
        .inject(Fault::next(FaultKind::ServerError, 1).on(routes::HOOK_ATTEMPTS));

    let pass = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");

    // Oldest first: the first request met the fault.
    assert_eq!(pass.failed, vec![first.guid.clone()]);
    assert_eq!(pass.requested, vec![second.guid.clone()]);
    let flagged: Vec<String> = deliveries(&env.pool)
        .await
        .into_iter()
        .filter(|d| d.redelivery_requested)
        .map(|d| d.id)
        .collect();
    assert_eq!(flagged, vec![second.guid.clone()]);

    let again = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");
    assert_eq!(again.requested, vec![first.guid.clone()]);
    assert_eq!(env.fake.redelivery_requests(), [second.id, first.id]);
}

#[tokio::test]
async fn only_one_replica_should_take_each_turn() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let gap = Duration::from_secs(300);

    let takers = (0..8).map(|_| take_turn(&pool, gap));
    let taken = futures_util::future::join_all(takers).await;

    let winners = taken.iter().filter(|t| matches!(t, Ok(true))).count();
    assert_eq!(winners, 1, "{taken:?}");
    assert!(!take_turn(&pool, gap).await.expect("the schedule"));
    assert!(take_turn(&pool, Duration::ZERO)
        .await
        .expect("the schedule"));
}

#[tokio::test]
async fn the_loop_should_recover_at_start_and_stop_when_told() {
    let env = env().await;
    let lost = env.fake.log_delivery(HookDelivery::new("push", 0));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(run_redelivery_loop(
        env.source.clone(),
        env.pool.clone(),
        HOUR,
        async move {
            let _ = stop_rx.await;
        },
    ));

    let fake = &env.fake;
    assert!(
        eventually(Duration::from_secs(10), || async {
            fake.redelivery_requests() == [lost.id]
        })
        .await,
        "asked at start"
    );
    let _ = stop_tx.send(());
    let stopped = tokio::time::timeout(Duration::from_secs(5), running).await;
    assert!(matches!(stopped, Ok(Ok(()))), "the loop stops");
    assert_eq!(
        fake.count(routes::HOOK_DELIVERIES),
        1,
        "one pass per period"
    );
}

fn push_fixture() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks/push.default-branch-created.json");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn a_redelivery_should_reach_the_webhook_route_and_enqueue_the_repository() {
    let env = env().await;
    let queue = queue(&env.pool);
    let hooks = router(WebhookState {
        pool: env.pool.clone(),
        queue,
        secret: SecretString::from(SECRET),
        metrics: env.metrics.clone(),
        limits: WebhookLimits::default(),
        free_pushes: None,
        shutdown: roster::shutdown::channel().1,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("local address");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, hooks).await;
    });
    env.fake
        .set_redelivery_target(&format!("http://{address}/webhooks/github"), SECRET);
    // The push arrived while Roster was down: GitHub could not connect.
    let lost = env.fake.log_delivery(
        HookDelivery::new("push", 0)
            .installation(1)
            .repository(186853002)
            .payload(push_fixture()),
    );

    let pass = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");
    assert_eq!(pass.requested, vec![lost.guid.clone()]);

    let pool = &env.pool;
    let guid = lost.guid.clone();
    let arrived = eventually(Duration::from_secs(10), || {
        let guid = guid.clone();
        async move {
            deliveries(pool)
                .await
                .iter()
                .any(|d| d.id == guid && d.outcome == "queued" && d.redelivery_requested)
        }
    })
    .await;
    assert!(
        arrived,
        "the redelivery was received: {:?}",
        deliveries(pool).await
    );
    let queued: Vec<i64> = sqlx::query_scalar("select repo_id from queue")
        .fetch_all(pool)
        .await
        .expect("the queue table");
    assert_eq!(queued, [186853002]);
    // Roster commits before it answers, and the fake logs the answer only
    // once it has read it: wait for GitHub's side too.
    let attempts = || -> Vec<u16> {
        env.fake
            .hook_deliveries()
            .iter()
            .filter(|d| d.guid == lost.guid)
            .map(|d| d.status_code)
            .collect()
    };
    let logged = eventually(Duration::from_secs(10), || {
        let done = attempts().len() == 2;
        async move { done }
    })
    .await;
    assert!(
        logged,
        "GitHub's log shows a second attempt: {:?}",
        attempts()
    );
    assert_eq!(attempts(), [0, 202], "GitHub's log shows the recovery");

    let again = recover_missed(&env.source, &env.pool)
        .await
        .expect("a pass");
    assert!(again.requested.is_empty(), "{again:?}");
    assert_eq!(env.fake.redelivery_requests(), [lost.id]);
    server.abort();
}
