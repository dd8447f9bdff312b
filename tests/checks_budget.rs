//! A flood of pull requests against a low GitHub budget: checks stop
//! spending at the reserve (per resource, half the window's limit) and
//! resume at the reset, a push still syncs at once, a pull request is
//! evaluated at most once every 10 seconds, on its newest head, and run
//! writes go a second apart.
//!
//! Before: 1,200 pull requests with 1,200 of 5,000 requests left spent
//! the budget down to nothing, and a push waited for the window's reset.
//! The count fell under the line in a window GitHub said resets sooner
//! than the one Roster knew, and such answers were taken as stale: checks
//! went on spending from the count they had (2,343 check requests after
//! the drop in the test below; now at most those already on their way).

use crate::checks::{env, yaml, Env, ACME, FILE};
use crate::support::fake_github::routes;

use std::time::{Duration, Instant};

/// The fake's window: 400 requests, of which checks may spend down to 200.
const LIMIT: u64 = 400;
const RESERVE: u64 = LIMIT / 2;
const LEFT: u64 = 150;
const FLOOD: i64 = 300;
/// Check requests that may be on their way at once: a pass claims 32
/// evaluations, each with one read and one post.
const IN_FLIGHT: usize = 64;

/// `acme/amp`, synced, and a budget of `LEFT` of `LIMIT` per resource
/// resetting in `reset_in`, which Roster has learnt from one pull request
/// checked with it.
async fn low_budget(reset_in: Duration) -> (Env, i64) {
    let mut env = env().await;
    env.worker.budget.reserve = true;
    let id = env.repo("amp", &yaml("amp", "v1")).await;
    env.quiet().await;
    for resource in ["core", "graphql"] {
        env.fake.set_budget(ACME, resource, LIMIT, LEFT, reset_in);
    }
    let sha = env.fake.pr_commit(id, FILE, yaml("amp", "pr").as_bytes());
    env.open_pr(id, "amp", 1, &sha).await;
    env.settle().await;
    assert_eq!(
        env.fake.check_runs_on(id, &sha).len(),
        1,
        "the first one went out"
    );
    env.fake.reset_counts();
    (env, id)
}

async fn flood(env: &Env, id: i64) {
    for number in 2..FLOOD + 2 {
        let text = yaml("amp", &format!("pr {number}"));
        let sha = env.fake.pr_commit(id, FILE, text.as_bytes());
        env.open_pr(id, "amp", number, &sha).await;
    }
}

async fn waiting(env: &Env) -> i64 {
    sqlx::query_scalar("select count(*) from check_requests")
        .fetch_one(&env.pool)
        .await
        .expect("count")
}

#[tokio::test]
async fn a_flood_below_the_reserve_should_spend_nothing_and_a_push_should_still_sync() {
    let (env, id) = low_budget(Duration::from_secs(3600)).await;
    let left = [
        env.fake.remaining(ACME, "core"),
        env.fake.remaining(ACME, "graphql"),
    ];
    flood(&env, id).await;
    env.settle().await;
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 0, "no file read");
    assert_eq!(
        env.fake.count(routes::CHECK_RUN_CREATE),
        0,
        "no run written"
    );
    assert_eq!(env.fake.total(), 0, "nothing at all");
    assert_eq!(
        [
            env.fake.remaining(ACME, "core"),
            env.fake.remaining(ACME, "graphql")
        ],
        left
    );
    // Every request kept, put off until the window resets (not counted
    // as a failed attempt).
    assert_eq!(waiting(&env).await, FLOOD);
    let (soonest, attempts): (f64, i64) = sqlx::query_as(
        "select extract(epoch from min(not_before) - now())::float8, sum(attempts)::int8
         from check_requests",
    )
    .fetch_one(&env.pool)
    .await
    .expect("waits");
    assert!(soonest > 3000.0, "put off {soonest} s, not until the reset");
    assert_eq!(attempts, 0);

    // A push syncs at once with what the checks left.
    env.fake
        .push_file(id, FILE, yaml("amp", "pushed").as_bytes());
    assert_eq!(env.reconcile(id).await, "synced");
    let description: Option<String> =
        sqlx::query_scalar("select description from entries where name = 'amp'")
            .fetch_one(&env.pool)
            .await
            .expect("entry");
    assert_eq!(description.as_deref(), Some("pushed"));
    println!(
        "flood of {FLOOD} pull requests with {LEFT} of {LIMIT} left: checks spent 0; the push's sync spent {} requests",
        env.fake.total()
    );
}

#[tokio::test]
async fn checks_should_resume_at_the_reset_and_stop_again_at_half_the_limit() {
    let mut env = env().await;
    env.worker.budget.reserve = true;
    let id = env.repo("amp", &yaml("amp", "v1")).await;
    env.quiet().await;
    // The flood arrives first; then the budget runs low, with a window
    // that resets in 20 s: long enough that the held passes and, after
    // the reset, spending down to the reserve fit in one window on a
    // loaded machine. One pass learns the budget.
    flood(&env, id).await;
    for resource in ["core", "graphql"] {
        env.fake
            .set_budget(ACME, resource, LIMIT, LEFT, Duration::from_secs(20));
    }
    env.worker.pass().await;
    env.fake.reset_counts();
    env.settle().await;
    assert_eq!(env.fake.total(), 0, "held until the reset");
    // After the reset the window holds LIMIT again: checks spend it down
    // to the reserve, and the rest waits for the next window.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let spent = env.worker.pass().await;
        if !spent && env.fake.count(routes::CHECK_RUN_CREATE) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "checks never resumed");
        if !spent {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let graphql = env.fake.remaining(ACME, "graphql");
    let core = env.fake.remaining(ACME, "core");
    let evaluated = env.fake.count(routes::GRAPHQL_FILE);
    println!(
        "after the reset: {evaluated} evaluated, {graphql} GraphQL and {core} REST left of {LIMIT}"
    );
    assert!(graphql >= RESERVE && core >= RESERVE, "{graphql} / {core}");
    assert!(
        evaluated >= (LIMIT - RESERVE) / 2,
        "only {evaluated} evaluated"
    );
    assert!(
        waiting(&env).await > 0,
        "the rest waits for the next window"
    );
    let registered: i64 = sqlx::query_scalar("select count(*) from entries")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(registered, 1, "pull requests register nothing");
}

#[tokio::test]
async fn a_pull_request_should_be_evaluated_once_every_ten_seconds_on_its_newest_head() {
    let mut env = env().await;
    let spacing = roster::checks::ChecksBudget::default().evaluation_spacing;
    assert_eq!(spacing, Duration::from_secs(10));
    env.worker.budget.evaluation_spacing = spacing;
    let id = env.repo("amp", &yaml("amp", "v1")).await;
    env.quiet().await;
    let heads: Vec<String> = (0..20)
        .map(|k| {
            env.fake
                .pr_commit(id, FILE, yaml("amp", &format!("push {k}")).as_bytes())
        })
        .collect();
    env.send_pr("synchronize", id, "amp", 7, &heads[0]).await;
    env.settle().await;
    let checked = Instant::now();
    // A burst of pushes right after that evaluation: each head replaces
    // the one before, and none is evaluated within the spacing.
    for head in &heads[1..] {
        env.send_pr("synchronize", id, "amp", 7, head).await;
        env.settle().await;
    }
    assert!(
        checked.elapsed() < spacing,
        "the burst outlasted the spacing"
    );
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 1, "one evaluation");
    assert_eq!(waiting(&env).await, 1, "the newest head waits its turn");
    // Ten seconds after the first, the newest head is evaluated, and
    // only it.
    sqlx::query("update check_evaluations set at = at - interval '10 seconds'")
        .execute(&env.pool)
        .await
        .expect("ten seconds pass");
    env.settle().await;
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 2);
    assert_eq!(waiting(&env).await, 0);
    let newest = heads.last().expect("heads");
    let run = env.only_run(id, newest);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert!(
        run.summary.unwrap_or_default().contains("push 19"),
        "the newest head's file"
    );
    for head in &heads[1..heads.len() - 1] {
        assert!(
            env.fake.check_runs_on(id, head).is_empty(),
            "a superseded head was checked"
        );
    }
}

#[tokio::test]
async fn run_writes_of_one_installation_should_go_a_second_apart() {
    let mut env = env().await;
    env.worker.budget.post_spacing = Duration::from_secs(1);
    let id = env.repo("amp", &yaml("amp", "v1")).await;
    env.quiet().await;
    let mut heads = Vec::new();
    for number in 1..=4 {
        let sha = env
            .fake
            .pr_commit(id, FILE, yaml("amp", &format!("pr {number}")).as_bytes());
        env.open_pr(id, "amp", number, &sha).await;
        heads.push(sha);
    }
    env.settle().await;
    let mut created: Vec<Instant> = heads
        .iter()
        .map(|sha| env.only_run(id, sha).created_at)
        .collect();
    created.sort();
    for pair in created.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(950), "writes {gap:?} apart");
    }
}

/// Check requests (reads of a head, run writes) the fake received after
/// `since`.
fn check_requests_after(env: &Env, since: Instant) -> usize {
    let checks = [
        routes::GRAPHQL_FILE,
        routes::CHECK_RUN_CREATE,
        routes::CHECK_RUN_UPDATE,
        routes::CHECK_RUNS_FOR_REF,
    ];
    env.fake
        .log()
        .iter()
        .filter(|logged| logged.at >= since && checks.contains(&logged.route))
        .count()
}

/// Whether every waiting evaluation and post is put off past `beyond`
/// from now (past a claim's 60 s lease): the loop spends nothing until then.
async fn all_put_off(env: &Env, beyond: Duration) -> bool {
    sqlx::query_scalar(
        "select not exists (select 1 from check_requests
                            where not_before < now() + make_interval(secs => $1))
            and not exists (select 1 from check_runs
                            where pending and not_before < now() + make_interval(secs => $1))",
    )
    .bind(beyond.as_secs_f64())
    .fetch_one(&env.pool)
    .await
    .expect("waiting work")
}

/// 1,200 pull requests queued, the loop checking them with a window of
/// 5,000 per resource (the line at 2,500); then `drop` takes what GitHub
/// says is left to 1,200. Checks stop within the requests already on
/// their way, and a push syncs at once.
async fn a_drop_under_a_queued_flood(drop: impl Fn(&Env)) {
    const QUEUED: i64 = 1_200;
    const DROPPED_TO: u64 = 1_200;
    let mut env = env().await;
    env.worker.budget.reserve = true;
    let id = env.repo("amp", &yaml("amp", "v1")).await;
    env.quiet().await;
    for number in 1..=QUEUED {
        let text = yaml("amp", &format!("pr {number}"));
        let sha = env.fake.pr_commit(id, FILE, text.as_bytes());
        env.open_pr(id, "amp", number, &sha).await;
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(env.worker.clone().run(async {
        let _ = stopped.await;
    }));
    // The loop is spending; then the sync (another replica, a listing)
    // takes the budget down below the line.
    let deadline = Instant::now() + Duration::from_secs(60);
    while env.fake.count(routes::CHECK_RUN_CREATE) < 20 {
        assert!(Instant::now() < deadline, "checks never started");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let dropped = Instant::now();
    drop(&env);
    let before = env.fake.count(routes::CHECK_RUN_CREATE);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !all_put_off(&env, Duration::from_secs(90)).await {
        assert!(Instant::now() < deadline, "checks never stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = check_requests_after(&env, dropped);
    let left = [
        env.fake.remaining(ACME, "core"),
        env.fake.remaining(ACME, "graphql"),
    ];
    println!(
        "{QUEUED} queued, {before} checked, then {DROPPED_TO} of 5,000 left: {after} check requests after the drop, {left:?} left"
    );
    // A request already on its way when the budget dropped still arrives
    // (at most a pass's claims: each one's read and its post); once an
    // answer has told the new budget, none is sent.
    assert!(after <= IN_FLIGHT, "{after} check requests below the line");
    for left in left {
        assert!(
            left + IN_FLIGHT as u64 >= DROPPED_TO,
            "spent down to {left}"
        );
    }

    // A push syncs at once with what is left.
    env.fake.reset_counts();
    env.fake
        .push_file(id, FILE, yaml("amp", "pushed").as_bytes());
    let started = Instant::now();
    assert_eq!(env.reconcile(id).await, "synced");
    println!(
        "the push synced in {:?} with {} requests",
        started.elapsed(),
        env.fake.total()
    );
    assert_eq!(check_requests_after(&env, started), 0);
    let _ = stop.send(());
    running.await.expect("the loop ends");
}

#[tokio::test]
async fn checks_should_stop_at_the_line_when_the_budget_drops_under_a_queued_flood() {
    a_drop_under_a_queued_flood(|env| {
        for resource in ["core", "graphql"] {
            env.fake.set_remaining(ACME, resource, 1_200);
        }
    })
    .await;
}

#[tokio::test]
async fn checks_should_stop_at_the_line_when_github_tells_a_window_that_resets_sooner() {
    // What GitHub says now wins over what Roster counted: the window it
    // reports resets in 165 s, before the one Roster knew.
    a_drop_under_a_queued_flood(|env| {
        for resource in ["core", "graphql"] {
            env.fake
                .set_budget(ACME, resource, 5_000, 1_200, Duration::from_secs(165));
        }
    })
    .await;
}

#[tokio::test]
async fn each_write_of_a_post_should_take_its_own_share_of_the_budget() {
    let mut env = env().await;
    env.worker.budget.reserve = true;
    let id = env.repo("noisy", &yaml("noisy", "fine")).await;
    env.quiet().await;
    // 120 problems: a create and two updates of 50 annotations. REST
    // keeps 200 of 400 for the sync, and one more is left above it.
    env.fake
        .set_budget(ACME, "core", LIMIT, RESERVE + 1, Duration::from_secs(3600));
    let unknown: String = (0..120).map(|k| format!("k{k}: x\n")).collect();
    let sha = env.fake.pr_commit(
        id,
        FILE,
        format!("name: noisy\nowner: t\n{unknown}").as_bytes(),
    );
    env.open_pr(id, "noisy", 1, &sha).await;
    env.settle().await;
    // The create learns the budget; the updates wait for the reset
    // instead of spending what the sync keeps.
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1);
    assert_eq!(env.fake.count(routes::CHECK_RUN_UPDATE), 0, "no update");
    assert_eq!(env.fake.remaining(ACME, "core"), RESERVE);
    let pending: bool = sqlx::query_scalar("select pending from check_runs where sha = $1")
        .bind(&sha)
        .fetch_one(&env.pool)
        .await
        .expect("the run's post");
    assert!(pending, "the rest of the post waits for the reset");
}
