//! The `Roster` check run, end to end in process: signed webhooks into the
//! real webhook route, the real checks loop and registry handler on a
//! fresh PostgreSQL, and the fake GitHub's checks API as the observer.

use crate::support;
use crate::support::registry::{handler, queue};
use support::{fake_github, pull_requests};

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use fake_github::{routes, FakeGithub, Fault, FaultKind};
use prometheus_client::registry::Registry;
use roster::checks::{ChecksMode, ChecksWorker};
use roster::controller::{Handler, Storage};
use roster::db::queue::PgQueue;
use roster::github::{GithubOptions, GithubSource, GithubStorage};
use roster::intake::free_push::FreePushes;
use roster::intake::{self, WebhookLimits, WebhookState};
use roster::metrics::Metrics;
use roster::project::fields::file_keys;
use roster::registry::RegistryHandler;
use roster::source::RepoId;
use secrecy::SecretString;
use sqlx::PgPool;

pub(crate) const FILE: &str = "project.yaml";
pub(crate) const ACME: i64 = 1;
const SECRET: &str = "checks-secret";

pub(crate) struct Env {
    pub(crate) fake: FakeGithub,
    pub(crate) pool: PgPool,
    pub(crate) queue: Arc<PgQueue>,
    pub(crate) handler: RegistryHandler,
    pub(crate) storage: GithubStorage,
    pub(crate) worker: ChecksWorker,
    pub(crate) hooks: axum::Router,
    /// The source itself, for its listing and its directory's reads.
    pub(crate) source: GithubSource,
}

pub(crate) async fn env() -> Env {
    env_with(ChecksMode::All).await
}

pub(crate) async fn env_with(mode: ChecksMode) -> Env {
    env_tuned(mode, GithubOptions::default()).await
}

pub(crate) async fn env_tuned(mode: ChecksMode, options: GithubOptions) -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let metrics = Arc::new(Metrics::new(&mut Registry::default()));
    let settings = roster::config::GithubAppSettings {
        webhook_secret: SecretString::from(SECRET.to_owned()),
        ..fake.settings()
    };
    let source =
        GithubSource::connect_with(&settings, FILE, pool.clone(), metrics.clone(), options)
            .await
            .expect("connect");
    let queue = queue(&pool);
    let handler = handler(&pool, queue.clone()).with_default_branch_checks(mode.default_branch());
    let hooks = roster::web::router::webhook(WebhookState {
        pool: pool.clone(),
        queue: queue.clone(),
        secret: SecretString::from(SECRET.to_owned()),
        metrics,
        limits: WebhookLimits::default(),
        free_pushes: Some(FreePushes::new(FILE)),
        shutdown: roster::shutdown::channel().1,
    });
    let mut worker = ChecksWorker::new(pool.clone(), source.checks(), mode);
    // These tests evaluate and post at once; the budget's own tests
    // (checks_budget) keep its spacing.
    worker.budget.evaluation_spacing = Duration::ZERO;
    worker.budget.post_spacing = Duration::ZERO;
    Env {
        worker,
        storage: source.storage(),
        fake,
        pool,
        queue,
        handler,
        hooks,
        source,
    }
}

pub(crate) fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

impl Env {
    /// A repository `acme/{name}` whose default branch holds `text`,
    /// reconciled; its id.
    pub(crate) async fn repo(&self, name: &str, text: &str) -> i64 {
        let id = self.fake.add_repo_with_file(ACME, name, FILE, text);
        self.reconcile(id).await;
        id
    }

    pub(crate) async fn reconcile(&self, id: i64) -> &'static str {
        let key = RepoId(id);
        let state = self.storage.get(&key, None).await;
        self.handler.apply(&key, state).await.unwrap_or("failed")
    }

    pub(crate) async fn deliver(&self, event: &str, body: Vec<u8>) {
        let signature = roster::intake::sign(SECRET, &body);
        let request = Request::post(intake::PATH)
            .header("content-type", "application/json")
            .header("x-github-event", event)
            .header("x-github-delivery", format!("d-{:016x}", fastrand::u64(..)))
            .header("x-hub-signature-256", signature)
            .body(Body::from(body))
            .expect("request");
        let answer = support::router::send(&self.hooks, request).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    }

    pub(crate) async fn open_pr(&self, repo: i64, name: &str, number: i64, sha: &str) {
        self.send_pr("opened", repo, name, number, sha).await;
    }

    pub(crate) async fn send_pr(
        &self,
        action: &str,
        repo: i64,
        name: &str,
        number: i64,
        sha: &str,
    ) {
        let pr = pull_requests::Pr {
            repo,
            installation: ACME,
            owner: "acme",
            name,
            number,
            sha,
            base: "main",
        };
        self.deliver("pull_request", pull_requests::pull_request(action, &pr))
            .await;
    }

    /// Posts what the setup's reconciles decided, then forgets the
    /// requests counted so far: what follows counts on its own.
    pub(crate) async fn quiet(&self) {
        self.settle().await;
        self.fake.reset_counts();
    }

    /// Runs the checks loop until it finds nothing to do.
    pub(crate) async fn settle(&self) {
        for _ in 0..100 {
            if !self.worker.pass().await {
                return;
            }
        }
        panic!("the checks loop never settled");
    }

    /// The registry, every repository's status and every event, as text.
    pub(crate) async fn dump(&self) -> String {
        let mut out = String::new();
        for table in ["entries", "repositories", "events"] {
            let rows: Vec<String> = sqlx::query_scalar(&format!(
                "select row_to_json(t)::text from {table} t order by row_to_json(t)::text"
            ))
            .fetch_all(&self.pool)
            .await
            .expect("dump");
            out.push_str(&rows.join("\n"));
        }
        out
    }

    pub(crate) fn only_run(&self, repo: i64, sha: &str) -> fake_github::checks::CheckRun {
        let runs = self.fake.check_runs_on(repo, sha);
        assert_eq!(runs.len(), 1, "one Roster run on {sha}: {runs:?}");
        runs.into_iter().next().expect("a run")
    }
}

#[tokio::test]
async fn a_pull_request_should_get_one_run_with_the_preview_field_by_field() {
    let env = env().await;
    let id = env.repo("checkout", &format!("{}projects: ~\n", "")).await;
    let _ = id;
    let id = env
        .repo(
            "shop",
            "projects:\n  - name: shop-api\n    owner: t\n  - name: shop-old\n    owner: t\n",
        )
        .await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        b"projects:\n  - name: shop-api\n    owner: new-team\n  - name: shop-web\n    owner: t\n",
    );
    env.open_pr(id, "shop", 7, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.name, "Roster");
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.title.as_deref(), Some("adds 1, changes 1, removes 1"));
    let summary = run.summary.unwrap_or_default();
    assert!(summary.contains("owner: `t` → `new-team`"), "{summary}");
    assert!(summary.contains("**Merging removes 1 entry from the registry: shop-old.**"));
    assert!(summary.contains("- **shop-web**"));
    // GitHub requests for the evaluation: one GraphQL read, one create.
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 1);
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1);
}

#[tokio::test]
async fn problems_should_fail_with_one_annotation_each_sent_fifty_at_a_time() {
    let env = env().await;
    let id = env.repo("noisy", &yaml("noisy", "fine")).await;
    let unknown: String = (0..120).map(|k| format!("k{k}: x\n")).collect();
    let sha = env.fake.pr_commit(
        id,
        FILE,
        format!("name: noisy\nowner: t\n{unknown}").as_bytes(),
    );
    env.open_pr(id, "noisy", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("120 problems"));
    // 100 problems and the "… and 20 more problems" line.
    assert_eq!(run.annotations.len(), 101);
    assert_eq!(run.writes, 3, "a create and two updates of at most 50");
    let first = &run.annotations[0];
    assert_eq!(first["path"], FILE);
    assert_eq!(first["start_line"], 3);
    assert_eq!(first["start_column"], 1);
    assert_eq!(first["annotation_level"], "failure");
    assert_eq!(
        first["message"],
        format!(
            "k0: unknown field (expected one of {})",
            file_keys().join(", ")
        )
    );
}

#[tokio::test]
async fn a_name_another_repository_owns_should_fail_naming_that_repository() {
    let env = env().await;
    env.repo("other", &yaml("taken", "theirs")).await;
    let id = env.repo("mine", &yaml("mine", "ours")).await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        b"projects:\n  - name: mine\n    owner: t\n  - name: taken\n    owner: t\n",
    );
    env.open_pr(id, "mine", 3, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("1 problem"));
    assert_eq!(
        run.annotations[0]["message"],
        "projects[1].name: \"taken\" is owned by acme/other"
    );
    assert_eq!(run.annotations[0]["start_line"], 4);
    assert!(run.summary.unwrap_or_default().contains("acme/other"));
}

#[tokio::test]
async fn pull_requests_should_leave_registry_status_and_events_byte_for_byte_unchanged() {
    let env = env().await;
    env.repo("other", &yaml("taken", "theirs")).await;
    let id = env.repo("mine", &yaml("mine", "ours")).await;
    let before = env.dump().await;
    let heads = [
        env.fake
            .pr_commit(id, FILE, yaml("mine", "changed").as_bytes()),
        env.fake.pr_commit(id, FILE, b"name: Mine\nowner: ''\n"),
        env.fake
            .pr_commit(id, FILE, yaml("taken", "mine now").as_bytes()),
        env.fake.pr_commit_deleting(id, FILE),
    ];
    for (k, sha) in heads.iter().enumerate() {
        env.open_pr(id, "mine", 10 + k as i64, sha).await;
    }
    env.settle().await;
    let conclusions: Vec<Option<String>> = heads
        .iter()
        .map(|sha| env.only_run(id, sha).conclusion)
        .collect();
    assert_eq!(
        conclusions,
        ["success", "failure", "failure", "success"].map(|c| Some(c.to_owned()))
    );
    let removed = env.only_run(id, &heads[3]);
    assert!(removed
        .summary
        .unwrap_or_default()
        .contains("**Merging removes 1 entry from the registry: mine.**"));
    assert_eq!(env.dump().await, before);
}

#[tokio::test]
async fn hostile_heads_should_get_a_clear_failure_or_neutral_never_a_crash() {
    let env = env().await;
    let id = env.repo("hostile", &yaml("hostile", "fine")).await;
    let huge = format!(
        "name: hostile\nowner: t\ndescription: {}\n",
        "x".repeat(300_000)
    );
    let cases = [
        (
            env.fake.pr_commit(id, FILE, huge.as_bytes()),
            "failure",
            "bytes",
        ),
        (
            // GitHub calls it binary; its bytes are text with a NUL.
            env.fake.pr_commit(id, FILE, b"name: a\0\x01\x02"),
            "failure",
            "1:8: file: contains a NUL",
        ),
        (
            env.fake.pr_commit(id, FILE, b"name: caf\xe9\nowner: t\n"),
            "failure",
            "UTF-8",
        ),
        (
            env.fake.pr_commit_symlink(id, FILE, "/etc/passwd"),
            "failure",
            "symbolic link",
        ),
    ];
    let gone = env
        .fake
        .pr_commit(id, FILE, yaml("hostile", "gone").as_bytes());
    env.fake.forget_commit(id, &gone);
    for (k, (sha, _, _)) in cases.iter().enumerate() {
        env.open_pr(id, "hostile", 20 + k as i64, sha).await;
    }
    env.open_pr(id, "hostile", 30, &gone).await;
    let before = env.dump().await;
    tokio::time::timeout(Duration::from_secs(30), env.settle())
        .await
        .expect("the checks loop never hangs");
    for (sha, conclusion, words) in &cases {
        let run = env.only_run(id, sha);
        assert_eq!(run.conclusion.as_deref(), Some(*conclusion), "{words}");
        assert_eq!(run.title.as_deref(), Some("1 problem"), "{words}");
        let summary = run.summary.unwrap_or_default();
        assert!(summary.contains(words), "{words}: {summary}");
    }
    // A commit GitHub no longer has cannot carry a run: GitHub refuses it
    // (422), which is not retried, and the evaluation says why on the
    // repository's page and in the API.
    assert!(env.fake.check_runs_on(id, &gone).is_empty());
    let (conclusion, title, pending, error): (String, String, bool, Option<String>) =
        sqlx::query_as(
            "select conclusion, title, pending, last_error from check_runs where sha = $1",
        )
        .bind(&gone)
        .fetch_one(&env.pool)
        .await
        .expect("the evaluation is recorded");
    assert_eq!(conclusion, "neutral");
    assert!(title.contains("no longer exists"), "{title}");
    assert!(!pending);
    assert!(error.unwrap_or_default().contains("No commit found"));
    assert_eq!(env.dump().await, before);
}

#[tokio::test]
async fn a_flood_of_synchronize_events_should_evaluate_the_latest_head_once() {
    let env = env().await;
    let id = env.repo("busy", &yaml("busy", "v0")).await;
    env.quiet().await;
    let mut last = String::new();
    for k in 1..=20 {
        last = env
            .fake
            .pr_commit(id, FILE, yaml("busy", &format!("v{k}")).as_bytes());
        env.send_pr("synchronize", id, "busy", 5, &last).await;
    }
    let waiting: i64 = sqlx::query_scalar("select count(*) from check_requests")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(waiting, 1);
    env.settle().await;
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 1);
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1);
    env.only_run(id, &last);
}

#[tokio::test]
async fn a_rerequest_should_update_the_one_run_of_the_commit() {
    let env = env().await;
    let id = env.repo("again", &yaml("again", "v1")).await;
    let other = env.repo("rival", "name: rival\nowner: t\n").await;
    let sha = env.fake.pr_commit(
        id,
        FILE,
        b"projects:\n  - name: again\n    owner: t\n  - name: fresh\n    owner: t\n",
    );
    env.quiet().await;
    env.open_pr(id, "again", 2, &sha).await;
    env.settle().await;
    assert_eq!(
        env.only_run(id, &sha).conclusion.as_deref(),
        Some("success")
    );
    // The rival takes `fresh` on its default branch; the rerun sees it.
    env.fake.push_file(
        other,
        FILE,
        b"projects:\n  - name: rival\n    owner: t\n  - name: fresh\n    owner: t\n",
    );
    env.reconcile(other).await;
    env.quiet().await;
    env.deliver(
        "check_run",
        pull_requests::run_rerequested(id, ACME, "acme", "again", 2, &sha),
    )
    .await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.writes, 2, "created once, updated once");
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 0);
    assert_eq!(env.fake.count(routes::CHECK_RUN_UPDATE), 1);
}

#[tokio::test]
async fn a_failed_post_should_be_kept_and_retried_until_github_has_it() {
    let env = env().await;
    let id = env.repo("flaky", &yaml("flaky", "v1")).await;
    let sha = env.fake.pr_commit(id, FILE, yaml("flaky", "v2").as_bytes());
    env.quiet().await;
    env.fake
        .inject(Fault::next(FaultKind::ServerError, 1).on(routes::CHECK_RUN_CREATE));
    env.open_pr(id, "flaky", 4, &sha).await;
    env.settle().await;
    assert!(env.fake.check_runs_on(id, &sha).is_empty());
    let (pending, attempts, error): (bool, i32, Option<String>) =
        sqlx::query_as("select pending, attempts, last_error from check_runs where sha = $1")
            .bind(&sha)
            .fetch_one(&env.pool)
            .await
            .expect("the intent is stored");
    assert!(pending);
    assert_eq!(attempts, 1);
    assert!(error.unwrap_or_default().contains("500"));
    // A new process (another worker on the same database) picks it up once
    // its backoff is over; here the wait is skipped.
    sqlx::query("update check_runs set not_before = now()")
        .execute(&env.pool)
        .await
        .expect("due now");
    let fresh = ChecksWorker::new(env.pool.clone(), env.worker.api.clone(), ChecksMode::All);
    while fresh.pass().await {}
    assert_eq!(
        env.only_run(id, &sha).conclusion.as_deref(),
        Some("success")
    );
}

#[tokio::test]
async fn without_checks_write_it_should_say_so_once_and_wait_for_new_permissions() {
    let env = env().await;
    let id = env.repo("locked", &yaml("locked", "v1")).await;
    env.quiet().await;
    env.fake.forbid_checks(ACME, true);
    let first = env
        .fake
        .pr_commit(id, FILE, yaml("locked", "v2").as_bytes());
    let second = env
        .fake
        .pr_commit(id, FILE, yaml("locked", "v3").as_bytes());
    env.open_pr(id, "locked", 1, &first).await;
    env.settle().await;
    env.open_pr(id, "locked", 2, &second).await;
    env.settle().await;
    assert_eq!(
        env.fake.count(routes::CHECK_RUN_CREATE),
        1,
        "one refused try, then none"
    );
    let denied = roster::registry::check_records::check_runs::denied_installations(&env.pool)
        .await
        .expect("denied");
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].installation_id.0, ACME);
    env.fake.forbid_checks(ACME, false);
    env.deliver("installation", pull_requests::permissions_accepted(ACME))
        .await;
    sqlx::query("update check_runs set not_before = now()")
        .execute(&env.pool)
        .await
        .expect("due now");
    env.settle().await;
    env.only_run(id, &first);
    env.only_run(id, &second);
}

#[tokio::test]
async fn the_default_branch_should_get_the_reconciles_verdict() {
    let env = env().await;
    let id = env.repo("main-line", &yaml("main-line", "v1")).await;
    env.settle().await;
    // A first sync that succeeds posts nothing (a new installation would
    // otherwise cost a request per repository).
    let first = env.fake.head(id).expect("head");
    assert!(env.fake.check_runs_on(id, &first).is_empty());
    let head = env
        .fake
        .push_file(id, FILE, yaml("main-line", "v2").as_bytes());
    assert_eq!(env.reconcile(id).await, "synced");
    env.settle().await;
    let run = env.only_run(id, &head);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 1, removes 0"));
    assert!(run
        .summary
        .unwrap_or_default()
        .contains("description: `v1` → `v2`"));
    let bad = env
        .fake
        .push_file(id, FILE, b"name: main-line\nowner: ''\n");
    assert_eq!(env.reconcile(id).await, "invalid");
    // The same commit reconciled again posts nothing new.
    env.reconcile(id).await;
    env.settle().await;
    let run = env.only_run(id, &bad);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations.len(), 1);
    assert_eq!(run.writes, 1);
    // GitHub failing: `error`, retried, and no run.
    let failing = env
        .fake
        .push_file(id, FILE, yaml("main-line", "v3").as_bytes());
    env.fake.inject(Fault::always(FaultKind::ServerError));
    assert_eq!(env.reconcile(id).await, "failed");
    env.fake.clear_faults();
    env.settle().await;
    assert!(env.fake.check_runs_on(id, &failing).is_empty());
}

#[tokio::test]
async fn checks_off_should_post_nothing_and_keep_no_request() {
    let env = env_with(ChecksMode::Off).await;
    let id = env.repo("quiet", &yaml("quiet", "v1")).await;
    let sha = env.fake.pr_commit(id, FILE, yaml("quiet", "v2").as_bytes());
    env.open_pr(id, "quiet", 1, &sha).await;
    env.settle().await;
    assert!(env.fake.check_runs(id).is_empty());
    let waiting: i64 = sqlx::query_scalar("select count(*) from check_requests")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(waiting, 0);
    let _ = &env.queue;
}

#[tokio::test]
async fn a_summary_longer_than_github_takes_should_be_cut_not_refused() {
    let env = env().await;
    let id = env.repo("monorepo", &yaml("monorepo", "v1")).await;
    let projects: String = (0..100)
        .map(|k| {
            format!(
                "  - name: p{k}\n    owner: t\n    description: {}\n",
                "d".repeat(990)
            )
        })
        .collect();
    let sha = env
        .fake
        .pr_commit(id, FILE, format!("projects:\n{projects}").as_bytes());
    env.open_pr(id, "monorepo", 9, &sha).await;
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    let summary = run.summary.unwrap_or_default();
    assert!(summary.len() <= 65_535);
    assert!(summary.contains("longer than GitHub shows"));
}

/// The API and dashboard router on the test's database.
pub(crate) fn web(env: &Env) -> axum::Router {
    let options = support::router::Options {
        api_token: None,
        github_web_url: Some("https://github.com"),
    };
    support::router::app_on(&env.pool, &env.queue, options, |_, _| {}, |_| {})
}

pub(crate) async fn get(app: &axum::Router, uri: &str) -> support::http::Answer {
    let request = Request::get(uri).body(Body::empty()).expect("request");
    support::router::send(app, request).await
}

#[tokio::test]
async fn the_api_and_the_repository_page_should_list_recent_checks_newest_first() {
    let env = env().await;
    let id = env.repo("listed", &yaml("listed", "v0")).await;
    let mut heads = Vec::new();
    for k in 1..=22 {
        let sha = env
            .fake
            .pr_commit(id, FILE, yaml("listed", &format!("v{k}")).as_bytes());
        env.open_pr(id, "listed", k, &sha).await;
        env.settle().await;
        heads.push(sha);
    }
    let app = web(&env);
    let detail = get(&app, "/api/v1/repos/acme/listed").await.json();
    let checks = detail["checks"].as_array().expect("checks");
    assert_eq!(checks.len(), 20);
    assert_eq!(checks[0]["sha"], heads[21].as_str());
    assert_eq!(checks[0]["pull_request"], 22);
    assert_eq!(checks[0]["conclusion"], "success");
    assert_eq!(checks[0]["title"], "adds 0, changes 1, removes 0");
    assert!(checks[0]["at"].is_string());
    assert_eq!(checks[19]["sha"], heads[2].as_str());
    let page = get(&app, "/repos/acme/listed").await;
    assert!(page.body.contains("Checks on GitHub"), "{}", page.body);
    assert!(page.body.contains("pull request #22"));
}

#[tokio::test]
async fn a_refused_permission_should_show_on_the_dashboard() {
    let env = env().await;
    let id = env.repo("shown", &yaml("shown", "v1")).await;
    env.fake.forbid_checks(ACME, true);
    let sha = env.fake.pr_commit(id, FILE, yaml("shown", "v2").as_bytes());
    env.open_pr(id, "shown", 1, &sha).await;
    env.settle().await;
    let page = get(&web(&env), "/").await;
    assert!(
        page.body
            .contains("<code>checks: write</code> is not granted"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn the_schema_should_be_served_for_editors() {
    let env = env().await;
    let answer = get(&web(&env), "/schema/project.json").await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header(axum::http::header::CONTENT_TYPE),
        "application/schema+json"
    );
    let schema = answer.json();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}

#[tokio::test]
async fn a_create_whose_answer_was_lost_should_be_found_not_made_twice() {
    let options = GithubOptions {
        request_timeout: Duration::from_millis(500),
        ..GithubOptions::default()
    };
    let env = env_tuned(ChecksMode::All, options).await;
    let id = env.repo("lost", &yaml("lost", "v1")).await;
    env.quiet().await;
    let sha = env.fake.pr_commit(id, FILE, yaml("lost", "v2").as_bytes());
    // GitHub creates the run, but its answer comes after Roster gave up.
    env.fake.inject(
        Fault::next(FaultKind::LateAnswer(Duration::from_millis(1500)), 1)
            .on(routes::CHECK_RUN_CREATE),
    );
    env.open_pr(id, "lost", 1, &sha).await;
    env.settle().await;
    sqlx::query("update check_runs set not_before = now()")
        .execute(&env.pool)
        .await
        .expect("due now");
    assert_eq!(
        env.fake.check_runs_on(id, &sha).len(),
        1,
        "GitHub has the run"
    );
    env.settle().await;
    let run = env.only_run(id, &sha);
    assert_eq!(run.writes, 2, "created once, then updated");
    assert_eq!(env.fake.count(routes::CHECK_RUNS_FOR_REF), 1);
    assert_eq!(env.fake.count(routes::CHECK_RUN_CREATE), 1);
}

#[tokio::test]
async fn a_rate_limited_post_should_wait_for_githubs_retry_after() {
    let env = env().await;
    let id = env.repo("limited", &yaml("limited", "v1")).await;
    env.quiet().await;
    let sha = env
        .fake
        .pr_commit(id, FILE, yaml("limited", "v2").as_bytes());
    env.fake.inject(
        Fault::next(FaultKind::TooManyRequests { retry_after: 120 }, 1)
            .on(routes::CHECK_RUN_CREATE),
    );
    env.open_pr(id, "limited", 1, &sha).await;
    env.settle().await;
    let wait: f64 = sqlx::query_scalar(
        "select extract(epoch from not_before - now())::float8 from check_runs where sha = $1",
    )
    .bind(&sha)
    .fetch_one(&env.pool)
    .await
    .expect("the intent waits");
    assert!(wait > 100.0, "waits {wait} s, not GitHub's 120 s");
    assert!(env.fake.check_runs_on(id, &sha).is_empty());
}

#[tokio::test]
async fn a_first_sync_with_problems_should_get_a_failing_run() {
    let env = env().await;
    let id = env
        .fake
        .add_repo_with_file(ACME, "broken", FILE, "name: broken\n");
    assert_eq!(env.reconcile(id).await, "invalid");
    env.settle().await;
    let head = env.fake.head(id).expect("head");
    let run = env.only_run(id, &head);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(
        run.annotations[0]["message"],
        "owner: missing required field"
    );
}
