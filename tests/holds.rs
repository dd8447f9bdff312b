//! The deletion guard (docs/contract.md#repository-statuses, docs/contract.md#http-routes) against a real PostgreSQL: the real
//! controller's listing and sweep, the PostgreSQL queue, the registry's
//! handler and tracker, and the HTTP API, over a fake organisation that
//! suddenly lists empty with a success.

use crate::support;
use crate::support::registry::{handler, installed_repo};

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::config::MaxRemovals;
use roster::controller::{
    Controller, ControllerConfig, Enqueue, Failure, Handler, Listed, Lister, Storage, WorkQueue,
};
use roster::db::queue::PgQueue;
use roster::registry::{DeletionGuard, RegistryHandler, RegistryTracker};
use roster::source::{FileState, InstallationId, Observed, RepoId};
use serde_json::Value;
use sqlx::PgPool;
use support::router;
use support::server::eventually;
use tracing_subscriber::fmt::MakeWriter;

/// The name a listing gives the partition of `installation` (`None`: the
/// local folder).
fn partition(installation: Option<i64>) -> roster::source::Partition {
    roster::source::Partition::of(installation.map(InstallationId))
}

const INSTALLATION: i64 = 42;
const TOKEN: &str = "holds-test-token";
const PERIOD: Duration = Duration::from_secs(3600);
/// How long a running controller may take to settle.
const LIMIT: Duration = Duration::from_secs(30);

/// The organisation as GitHub would show it now: repository id → name.
#[derive(Clone, Default)]
struct World(Arc<Mutex<BTreeMap<i64, String>>>);

impl World {
    fn with_repos(n: i64) -> Self {
        let world = World::default();
        world.set((1..=n).map(|i| (i, format!("repo-{i:02}"))).collect());
        world
    }

    fn set(&self, repos: BTreeMap<i64, String>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = repos;
    }

    fn get(&self) -> BTreeMap<i64, String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn remove(&self, ids: impl IntoIterator<Item = i64>) {
        let mut repos = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for id in ids {
            repos.remove(&id);
        }
    }
}

/// Lists the whole world as one complete installation, always with success.
struct WorldLister(World);

impl Lister for WorldLister {
    type Key = RepoId;
    type Partition = roster::source::Partition;

    async fn list(&self) -> Result<Vec<Listed<RepoId, Self::Partition>>, Failure> {
        Ok(vec![Listed {
            partition: partition(Some(INSTALLATION)),
            items: self
                .0
                .get()
                .into_keys()
                .map(|id| Enqueue::fresh(RepoId(id)))
                .collect(),
            outcome: Ok(()),
        }])
    }
}

/// Answers like GitHub: the repository with its project file, or a
/// definite "not found" once it left the world.
struct WorldStorage(World);

impl Storage for WorldStorage {
    type Key = RepoId;
    type State = Observed;

    async fn get(&self, key: &RepoId, _hint: Option<&[u8]>) -> Result<Observed, Failure> {
        let Some(name) = self.0.get().get(&key.0).cloned() else {
            return Ok(Observed::Removed {
                repo: None,
                reason: "GitHub answered 404".into(),
            });
        };
        let yaml = format!("name: {name}\nowner: team-{name}\n");
        Ok(Observed::Present {
            repo: installed_repo("acme", name, INSTALLATION),
            file: FileState::Found {
                sha: format!("{:040x}", key.0),
                bytes: yaml.into_bytes(),
            },
        })
    }
}

type TestController =
    Controller<PgQueue, WorldLister, RegistryTracker, WorldStorage, RegistryHandler>;

struct Fixture {
    max_removals: MaxRemovals,
    pool: PgPool,
    queue: Arc<PgQueue>,
    world: World,
    storage: Arc<WorldStorage>,
    handler: Arc<RegistryHandler>,
    controller: TestController,
    app: Router,
}

/// The real pieces on a fresh database, over a world of `repos`
/// repositories, with the guard's bound `max_removals` (tracker and handler).
async fn fixture(repos: i64, max_removals: MaxRemovals) -> Fixture {
    let options = router::Options {
        api_token: Some(TOKEN),
        github_web_url: None,
    };
    let router::Fixture { pool, queue, app } = router::fixture(options, |_, _| {}).await;
    let world = World::with_repos(repos);
    let storage = Arc::new(WorldStorage(world.clone()));
    let handler = Arc::new(
        handler(&pool, queue.clone()).with_guard(DeletionGuard::new(max_removals, PERIOD)),
    );
    let tracker = Arc::new(
        RegistryTracker::new(pool.clone()).with_guard(DeletionGuard::new(max_removals, PERIOD)),
    );
    let controller = Controller::new(
        queue.clone(),
        Arc::new(WorldLister(world.clone())),
        tracker,
        storage.clone(),
        handler.clone(),
    );
    Fixture {
        max_removals,
        pool,
        queue,
        world,
        storage,
        handler,
        controller,
        app,
    }
}

impl Fixture {
    /// Runs every queued reconcile as a worker would; returns the outcomes.
    async fn drain(&self) -> BTreeMap<&'static str, usize> {
        let mut outcomes = BTreeMap::new();
        while let Some(claim) = self.queue.claim("test").await.expect("claim") {
            let state = self.storage.get(&claim.key, claim.hint.as_deref()).await;
            let outcome = self.handler.apply(&claim.key, state).await.expect("apply");
            *outcomes.entry(outcome).or_insert(0) += 1;
            self.queue.done(&claim).await.expect("done");
        }
        outcomes
    }

    /// Runs every queued reconcile on `workers` concurrent workers, as
    /// several replicas would; returns the outcomes.
    async fn drain_on(self: &Arc<Self>, workers: usize) -> BTreeMap<&'static str, usize> {
        let workers: Vec<_> = (0..workers)
            .map(|_| {
                let f = self.clone();
                tokio::spawn(async move { f.drain().await })
            })
            .collect();
        let mut outcomes = BTreeMap::new();
        for worker in workers {
            for (outcome, n) in worker.await.expect("worker") {
                *outcomes.entry(outcome).or_insert(0) += n;
            }
        }
        outcomes
    }

    /// The real controller on this fixture's pieces with `workers` workers,
    /// running until the returned sender is dropped or sent to. It lists at
    /// once, with its workers reconciling while the sweep runs.
    fn run_controller(
        &self,
        workers: usize,
    ) -> (roster::shutdown::Stop, tokio::task::JoinHandle<()>) {
        let guard = DeletionGuard::new(self.max_removals, PERIOD);
        let tracker = Arc::new(RegistryTracker::new(self.pool.clone()).with_guard(guard));
        let controller = Controller::new(
            self.queue.clone(),
            Arc::new(WorldLister(self.world.clone())),
            tracker,
            self.storage.clone(),
            self.handler.clone(),
        )
        .with_config(ControllerConfig {
            workers,
            poll_interval: Duration::from_millis(100),
            ..ControllerConfig::default()
        });
        let (stop, shutdown) = roster::shutdown::channel();
        let task = tokio::spawn(controller.run(shutdown));
        (stop, task)
    }

    /// The active holds as `/api/v1/holds` lists them.
    async fn holds(&self) -> Vec<Value> {
        self.json("/api/v1/holds").await["items"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("no items in /api/v1/holds"))
    }

    /// The dashboard's overview page; held repositories carry a badge.
    async fn overview(&self) -> String {
        let (status, body) = self.request(Method::GET, "/?limit=100", None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// A full listing with its sweep, then every reconcile it queued.
    async fn list_and_reconcile(&self) -> BTreeMap<&'static str, usize> {
        self.controller.list_and_sweep().await;
        self.drain().await
    }

    async fn statuses(&self) -> BTreeMap<String, i64> {
        sqlx::query_as("select status, count(*) from repositories group by status")
            .fetch_all(&self.pool)
            .await
            .expect("count statuses")
            .into_iter()
            .collect()
    }

    async fn entry_count(&self) -> i64 {
        sqlx::query_scalar("select count(*) from entries")
            .fetch_one(&self.pool)
            .await
            .expect("count entries")
    }

    async fn request(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
    ) -> (StatusCode, String) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(Body::empty()).expect("request");
        let answer = router::send(&self.app, request).await;
        (answer.status, answer.body)
    }

    async fn json(&self, uri: &str) -> Value {
        let (status, body) = self.request(Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
    }

    async fn release(&self, hold: i64, token: Option<&str>) -> (StatusCode, Value) {
        let uri = format!("/api/v1/holds/{hold}/release");
        let (status, body) = self.request(Method::POST, &uri, token).await;
        let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
        (status, json)
    }

    /// The value of the `roster_holds` gauge as `/metrics` shows it.
    async fn holds_gauge(&self) -> String {
        let (status, body) = self.request(Method::GET, "/metrics", None).await;
        assert_eq!(status, StatusCode::OK);
        body.lines()
            .find_map(|line| line.strip_prefix("roster_holds "))
            .unwrap_or_else(|| panic!("no roster_holds in {body}"))
            .to_owned()
    }
}

/// Log lines written while it is the thread's default subscriber.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub(crate) fn capture(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(self.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub(crate) fn warnings_about(&self, needle: &str) -> Vec<String> {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| line.contains(" WARN ") && line.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

impl io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Logs {
    type Writer = Logs;

    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

fn statuses(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

/// The one active hold's id, after checking `/api/v1/holds` shows it whole.
async fn the_one_hold(f: &Fixture, repos: usize, reason: &str) -> i64 {
    let holds = f.json("/api/v1/holds").await;
    let items = holds["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{holds}");
    assert_eq!(holds["next_cursor"], Value::Null);
    let hold = &items[0];
    assert_eq!(hold["installation_id"], INSTALLATION, "{hold}");
    assert_eq!(
        hold["repos"].as_array().map(Vec::len),
        Some(repos),
        "{hold}"
    );
    assert!(hold["since"].as_str().is_some(), "{hold}");
    assert_eq!(hold["reason"], reason, "{hold}");
    hold["id"].as_i64().expect("hold id")
}

#[tokio::test]
async fn an_empty_listing_should_hold_every_removal_until_an_operator_releases_it() {
    let logs = Logs::default();
    let _capture = logs.capture();
    let f = fixture(40, MaxRemovals::Default).await;
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::from([("synced", 40)])
    );
    assert_eq!(f.entry_count().await, 40);

    // GitHub suddenly lists an empty organisation, with a 200, and answers
    // 404 for every repository.
    f.world.set(BTreeMap::new());
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::new(),
        "nothing swept"
    );

    assert_eq!(f.statuses().await, statuses(&[("synced", 40)]));
    assert_eq!(f.entry_count().await, 40);
    let reason =
        "a complete listing of installation 42 no longer returned 40 of 40 repositories (limit 10)";
    let hold = the_one_hold(&f, 40, reason).await;
    let repos = f.json("/api/v1/repos?limit=1000").await;
    let items = repos["items"].as_array().expect("items");
    assert_eq!(items.len(), 40);
    for repo in items {
        assert_eq!(repo["status"], "synced", "{repo}");
        assert_eq!(repo["hold"]["id"], hold, "{repo}");
        assert_eq!(repo["hold"]["reason"], reason, "{repo}");
        assert!(repo["hold"]["since"].as_str().is_some(), "{repo}");
    }
    let detail = f.json("/api/v1/repos/acme/repo-07").await;
    assert_eq!(detail["hold"]["id"], hold, "{detail}");
    assert_eq!(detail["projects"], serde_json::json!(["repo-07"]));
    assert_eq!(f.holds_gauge().await, "1");
    assert_eq!(logs.warnings_about("deletion guard").len(), 1);

    // A webhook saying one of them was deleted does not get past the hold.
    f.queue
        .enqueue(vec![Enqueue::fresh(RepoId(7))])
        .await
        .expect("enqueue");
    assert_eq!(f.drain().await, BTreeMap::from([("held", 1)]));
    // Nor does the next listing, still empty.
    assert_eq!(f.list_and_reconcile().await, BTreeMap::new());
    assert_eq!(f.statuses().await, statuses(&[("synced", 40)]));
    assert_eq!(f.entry_count().await, 40);
    assert_eq!(the_one_hold(&f, 40, reason).await, hold);

    // Only an operator with the token releases it.
    let (status, body) = f.release(hold, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body) = f.release(hold, Some("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(
        f.json("/api/v1/holds").await["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );

    let (status, body) = f.release(hold, Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, serde_json::json!({ "released": 40 }));
    assert_eq!(f.drain().await, BTreeMap::from([("removed", 40)]));
    assert_eq!(f.statuses().await, statuses(&[("removed", 40)]));
    assert_eq!(f.entry_count().await, 0);
    // The change log says why they went, each with its last version.
    let removed = roster::registry::changes::recently_removed(&f.pool, 100)
        .await
        .expect("removed");
    assert_eq!(removed.len(), 40);
    assert!(removed
        .iter()
        .all(|c| c.cause == "hold_released" && c.before.is_some()));
    assert_eq!(
        f.json("/api/v1/holds").await["items"],
        serde_json::json!([])
    );
    assert_eq!(
        f.json("/api/v1/repos/acme/repo-07").await["hold"],
        Value::Null
    );
    assert_eq!(f.holds_gauge().await, "0");

    // Released once: a second release, or an unknown hold, is a 404.
    for id in [hold, hold + 100] {
        let (status, body) = f.release(id, Some(TOKEN)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert!(body["error"].as_str().is_some(), "{body}");
    }
    let (status, _) = f
        .request(Method::POST, "/api/v1/holds/x/release", Some(TOKEN))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_hold_should_clear_by_itself_when_the_next_listing_brings_the_repositories_back() {
    let f = fixture(40, MaxRemovals::Default).await;
    f.list_and_reconcile().await;
    let everything = f.world.get();

    f.world.set(BTreeMap::new());
    f.list_and_reconcile().await;
    let hold = f.json("/api/v1/holds").await["items"][0]["id"].clone();
    assert!(hold.is_i64(), "a hold is active");

    f.world.set(everything);
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::from([("synced", 40)])
    );
    assert_eq!(
        f.json("/api/v1/holds").await["items"],
        serde_json::json!([])
    );
    assert_eq!(f.holds_gauge().await, "0");
    let repos = f.json("/api/v1/repos?limit=1000").await;
    for repo in repos["items"].as_array().expect("items") {
        assert_eq!(repo["hold"], Value::Null, "{repo}");
    }
    assert_eq!(f.statuses().await, statuses(&[("synced", 40)]));
    assert_eq!(f.entry_count().await, 40);

    // The hold is gone for good: releasing it now is a 404.
    let id = hold.as_i64().expect("hold id");
    assert_eq!(f.release(id, Some(TOKEN)).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_few_repositories_gone_should_be_removed_without_a_hold() {
    let f = fixture(40, MaxRemovals::Default).await;
    f.list_and_reconcile().await;

    f.world.remove([3, 17, 40]);
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::from([("removed", 3), ("synced", 37)])
    );
    assert_eq!(
        f.statuses().await,
        statuses(&[("removed", 3), ("synced", 37)])
    );
    assert_eq!(f.entry_count().await, 37);
    assert_eq!(
        f.json("/api/v1/holds").await["items"],
        serde_json::json!([])
    );
    assert_eq!(f.holds_gauge().await, "0");
}

#[tokio::test]
async fn a_run_of_removals_should_hold_those_past_the_bound_of_the_period() {
    let logs = Logs::default();
    let _capture = logs.capture();
    let f = fixture(40, MaxRemovals::Count(10)).await;
    f.list_and_reconcile().await;

    // Fifteen `repository.deleted` webhooks in one listing period.
    let deleted: Vec<i64> = (1..=15).collect();
    f.world.remove(deleted.clone());
    f.queue
        .enqueue(
            deleted
                .iter()
                .map(|&id| Enqueue::fresh(RepoId(id)))
                .collect(),
        )
        .await
        .expect("enqueue");
    assert_eq!(
        f.drain().await,
        BTreeMap::from([("held", 5), ("removed", 10)])
    );
    assert_eq!(
        f.statuses().await,
        statuses(&[("removed", 10), ("synced", 30)])
    );
    assert_eq!(f.entry_count().await, 30);
    let hold = the_one_hold(
        &f,
        5,
        "installation 42 already had 10 removals within 1h (limit 10)",
    )
    .await;
    assert_eq!(f.holds_gauge().await, "1");
    assert_eq!(logs.warnings_about("deletion guard").len(), 1);

    // The next listing does not sweep the held ones either: 5 gone of 35 is
    // under the sweep's bound, but their removals stay on the hold.
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::from([("held", 5), ("synced", 25)])
    );
    assert_eq!(
        f.statuses().await,
        statuses(&[("removed", 10), ("synced", 30)])
    );

    let (status, body) = f.release(hold, Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, serde_json::json!({ "released": 5 }));
    assert_eq!(f.drain().await, BTreeMap::from([("removed", 5)]));
    assert_eq!(
        f.statuses().await,
        statuses(&[("removed", 15), ("synced", 25)])
    );
    assert_eq!(f.entry_count().await, 25);
}

#[tokio::test]
async fn removals_of_an_earlier_period_should_not_count_against_the_bound() {
    let f = fixture(40, MaxRemovals::Count(2)).await;
    f.list_and_reconcile().await;

    f.world.remove([1, 2, 3]);
    f.queue
        .enqueue((1..=2).map(|id| Enqueue::fresh(RepoId(id))).collect())
        .await
        .expect("enqueue");
    assert_eq!(f.drain().await, BTreeMap::from([("removed", 2)]));
    // The period moves on: those two removals are now older than it.
    sqlx::query("update repositories set removed_at = removed_at - interval '2 hours'")
        .execute(&f.pool)
        .await
        .expect("age removals");
    f.queue
        .enqueue(vec![Enqueue::fresh(RepoId(3))])
        .await
        .expect("enqueue");
    assert_eq!(f.drain().await, BTreeMap::from([("removed", 1)]));
    assert_eq!(
        f.json("/api/v1/holds").await["items"],
        serde_json::json!([])
    );
}

#[tokio::test]
async fn a_held_repository_seen_again_should_leave_the_hold() {
    let f = fixture(40, MaxRemovals::Default).await;
    f.list_and_reconcile().await;
    let everything = f.world.get();
    f.world.set(BTreeMap::new());
    f.list_and_reconcile().await;
    let hold = the_one_hold(
        &f,
        40,
        "a complete listing of installation 42 no longer returned 40 of 40 repositories (limit 10)",
    )
    .await;

    // A push webhook for one of them: GitHub shows it, so it is not gone.
    f.world
        .set(everything.into_iter().filter(|(id, _)| *id == 9).collect());
    f.queue
        .enqueue(vec![Enqueue::fresh(RepoId(9))])
        .await
        .expect("enqueue");
    assert_eq!(f.drain().await, BTreeMap::from([("synced", 1)]));
    assert_eq!(
        f.json("/api/v1/repos/acme/repo-09").await["hold"],
        Value::Null
    );
    let holds = f.json("/api/v1/holds").await;
    assert_eq!(holds["items"][0]["id"], hold);
    assert_eq!(
        holds["items"][0]["repos"].as_array().map(Vec::len),
        Some(39)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_removals_should_not_overshoot_the_bound() {
    let f = Arc::new(fixture(60, MaxRemovals::Count(10)).await);
    f.list_and_reconcile().await;

    let deleted: Vec<i64> = (1..=30).collect();
    f.world.remove(deleted.clone());
    f.queue
        .enqueue(
            deleted
                .iter()
                .map(|&id| Enqueue::fresh(RepoId(id)))
                .collect(),
        )
        .await
        .expect("enqueue");
    // Eight workers at once, as several replicas would run them.
    let outcomes = f.drain_on(8).await;
    assert_eq!(outcomes, BTreeMap::from([("held", 20), ("removed", 10)]));
    assert_eq!(
        f.statuses().await,
        statuses(&[("removed", 10), ("synced", 50)])
    );
    assert_eq!(
        f.json("/api/v1/holds").await["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// What the dashboard marks a held repository with.
const HELD_BADGE: &str = r#"<span class="badge hold""#;

/// Opens a hold on every repository of the fixture with an empty listing,
/// and returns the world as it was and the hold's id.
async fn hold_everything(f: &Fixture, repos: usize) -> (BTreeMap<i64, String>, i64) {
    let everything = f.world.get();
    f.world.set(BTreeMap::new());
    assert_eq!(f.list_and_reconcile().await, BTreeMap::new());
    let holds = f.holds().await;
    assert_eq!(holds.len(), 1, "{holds:?}");
    assert_eq!(
        holds[0]["repos"].as_array().map(Vec::len),
        Some(repos),
        "{holds:?}"
    );
    assert_eq!(f.holds_gauge().await, "1");
    let hold = holds[0]["id"].as_i64().expect("hold id");
    (everything, hold)
}

/// After the last repository came back: no active hold anywhere (API,
/// gauge, dashboard), the hold cannot be released any more, and nothing
/// was removed on the way.
async fn assert_hold_closed(f: &Fixture, hold: i64, repos: i64) {
    assert_eq!(f.holds().await, Vec::<Value>::new());
    assert_eq!(f.holds_gauge().await, "0");
    assert!(!f.overview().await.contains(HELD_BADGE));
    let listed = f.json("/api/v1/repos?limit=1000").await;
    for repo in listed["items"].as_array().expect("items") {
        assert_eq!(repo["hold"], Value::Null, "{repo}");
    }
    assert_eq!(f.statuses().await, statuses(&[("synced", repos)]));
    assert_eq!(f.entry_count().await, repos);
    assert_eq!(f.release(hold, Some(TOKEN)).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_hold_should_close_when_its_last_repository_comes_back_one_by_one() {
    let f = fixture(12, MaxRemovals::Default).await;
    f.list_and_reconcile().await;
    let (everything, hold) = hold_everything(&f, 12).await;
    assert!(f.overview().await.contains(HELD_BADGE));

    // Access comes back to one repository at a time (a webhook for each).
    let mut back = BTreeMap::new();
    for (id, name) in everything.iter().take(11) {
        back.insert(*id, name.clone());
        f.world.set(back.clone());
        f.queue
            .enqueue(vec![Enqueue::fresh(RepoId(*id))])
            .await
            .expect("enqueue");
        assert_eq!(f.drain().await, BTreeMap::from([("synced", 1)]));
        let holds = f.holds().await;
        assert_eq!(holds.len(), 1, "{holds:?}");
        assert_eq!(holds[0]["id"], hold);
        assert_eq!(
            holds[0]["repos"].as_array().map(Vec::len),
            Some(12 - back.len()),
            "{holds:?}"
        );
        assert_eq!(f.holds_gauge().await, "1");
        assert_eq!(f.entry_count().await, 12);
    }

    // The last one appears in a listing again: the hold closes with it.
    f.world.set(everything);
    assert_eq!(
        f.list_and_reconcile().await,
        BTreeMap::from([("synced", 12)])
    );
    assert_hold_closed(&f, hold, 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_should_close_when_its_repositories_come_back_on_many_workers_at_once() {
    let f = Arc::new(fixture(40, MaxRemovals::Default).await);
    f.list_and_reconcile().await;
    // Several rounds: each is a chance for two workers to take the last
    // repositories off the hold at the same moment.
    for _ in 0..5 {
        let (everything, hold) = hold_everything(&f, 40).await;
        // Access to the whole installation comes back (one webhook naming
        // every repository); eight workers reconcile them at once.
        f.world.set(everything.clone());
        f.queue
            .enqueue(
                everything
                    .keys()
                    .map(|&id| Enqueue::fresh(RepoId(id)))
                    .collect(),
            )
            .await
            .expect("enqueue");
        assert_eq!(f.drain_on(8).await, BTreeMap::from([("synced", 40)]));
        assert_hold_closed(&f, hold, 40).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_should_close_when_a_whole_listing_follows_an_empty_one_on_a_running_controller() {
    let f = fixture(40, MaxRemovals::Default).await;
    f.list_and_reconcile().await;
    let (everything, hold) = hold_everything(&f, 40).await;

    // The next listing is whole again, run by the real controller: its
    // workers reconcile the listed repositories while the sweep runs.
    f.world.set(everything);
    let (stop, controller) = f.run_controller(8);
    eventually(
        "every repository synced and the hold closed",
        LIMIT,
        || async {
            let settled = f.statuses().await == statuses(&[("synced", 40)])
                && f.queue.depth().await.ok()? == 0
                && f.holds().await.is_empty();
            settled.then_some(())
        },
    )
    .await;
    stop.stop();
    controller.await.expect("controller");
    assert_hold_closed(&f, hold, 40).await;
}

#[tokio::test]
async fn a_hold_left_with_no_repository_should_be_closed_by_the_upgrade() {
    let f = fixture(40, MaxRemovals::Default).await;
    f.list_and_reconcile().await;
    let (_, kept) = hold_everything(&f, 40).await;
    // What an earlier version could leave: an active hold none points at.
    let empty: i64 = sqlx::query_scalar(
        "insert into holds (partition, reason) values ('installation/7', 'left empty')
         returning id",
    )
    .fetch_one(&f.pool)
    .await
    .expect("insert hold");
    assert_eq!(f.holds().await.len(), 2);
    assert_eq!(f.holds_gauge().await, "2");

    sqlx::raw_sql(include_str!("../migrations/0011_close_empty_holds.sql"))
        .execute(&f.pool)
        .await
        .expect("migration");

    let holds = f.holds().await;
    assert_eq!(holds.len(), 1, "{holds:?}");
    assert_eq!(holds[0]["id"], kept);
    assert_eq!(holds[0]["repos"].as_array().map(Vec::len), Some(40));
    assert_eq!(f.holds_gauge().await, "1");
    assert_eq!(f.release(empty, Some(TOKEN)).await.0, StatusCode::NOT_FOUND);
    assert_eq!(f.statuses().await, statuses(&[("synced", 40)]));
    assert_eq!(f.entry_count().await, 40);
}
