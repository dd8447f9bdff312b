//! The real `roster serve`, configured as a GitHub App, against the fake
//! GitHub and a fresh PostgreSQL database: installs, pushes, deletions,
//! renames and GitHub misbehaving, each observed through the HTTP API.

use crate::support;
use support::fake_github;
use support::github_app;

use std::time::{Duration, Instant};

use axum::http::Method;
use fake_github::{routes, FakeGithub, Fault, FaultKind, APP_ID, PRIVATE_KEY};
use github_app::{deliver, push, renamed, resync, server_env, Repo, API_TOKEN};
use serde_json::Value;
use sqlx::PgPool;
use support::http::{get, send};
use support::server::{eventually, Roster};

const FILE: &str = "project.yaml";
const LIMIT: Duration = Duration::from_secs(30);

/// The fake GitHub, the database and the server pointed at both.
struct Env {
    fake: FakeGithub,
    pool: PgPool,
    roster: Roster,
    _dir: tempfile::TempDir,
}

/// Installation 1 of the App, on the organisation `acme`.
const ACME: i64 = 1;

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

/// A fake GitHub with the `acme` installation, shaped by `build` before the
/// server starts (so its start-up listing sees it).
async fn fake_with(build: impl FnOnce(&FakeGithub)) -> FakeGithub {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    build(&fake);
    fake
}

/// The server with one repository, `acme/checkout` declaring
/// `checkout-api`, once it is synced: the server, the repository id, and its
/// JSON at that point.
async fn synced_checkout() -> (Env, i64, Value) {
    let mut id = 0;
    let fake = fake_with(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "before"));
    })
    .await;
    let env = start(fake).await;
    let before = env
        .repo_until("acme/checkout", "synced", |r| r["status"] == "synced")
        .await;
    (env, id, before)
}

/// Starts the server on a fresh database against `fake`.
async fn start(fake: FakeGithub) -> Env {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let api = fake.api_url().to_string();
    let graphql = fake.graphql_url().to_string();
    let env = server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url);
    let roster = Roster::start(&env, dir.path()).await;
    Env {
        fake,
        pool,
        roster,
        _dir: dir,
    }
}

impl Env {
    async fn repo(&self, full_name: &str) -> Option<Value> {
        let answer = get(&self.roster.url(&format!("/api/v1/repos/{full_name}")))
            .await
            .ok()?;
        answer.status.is_success().then(|| answer.json())
    }

    async fn project(&self, name: &str) -> Option<Value> {
        let answer = get(&self.roster.url(&format!("/api/v1/projects/{name}")))
            .await
            .ok()?;
        answer.status.is_success().then(|| answer.json())
    }

    /// Waits until `full_name` satisfies `check`; its JSON then.
    async fn repo_until(
        &self,
        full_name: &str,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let label = format!("{full_name}: {what}");
        eventually(&label, LIMIT, || async {
            self.repo(full_name).await.filter(|r| check(r))
        })
        .await
    }

    /// Every repository, once `count` are known and none is pending:
    /// full name → JSON.
    async fn settled(&self, count: usize) -> std::collections::BTreeMap<String, Value> {
        eventually("every repository reconciled", LIMIT, || async {
            let a = get(&self.roster.url("/api/v1/repos?limit=1000"))
                .await
                .ok()?;
            let items = a.json()["items"].as_array()?.clone();
            let repos: std::collections::BTreeMap<String, Value> = items
                .into_iter()
                .map(|r| (r["full_name"].as_str().unwrap_or_default().to_owned(), r))
                .collect();
            let done = repos.len() == count && repos.values().all(|r| r["status"] != "pending");
            done.then_some(repos)
        })
        .await
    }

    /// Waits until no work is queued (every trigger handled).
    async fn drained(&self) {
        eventually("an empty queue", LIMIT, || async {
            let queued: i64 = sqlx::query_scalar("select count(*) from queue")
                .fetch_one(&self.pool)
                .await
                .ok()?;
            (queued == 0).then_some(())
        })
        .await
    }

    /// Requests that read one repository over REST (what listed
    /// repositories must not cost).
    fn per_repo_reads(&self) -> u64 {
        [
            routes::REPO_BY_ID,
            routes::REPO,
            routes::COMMIT,
            routes::CONTENTS,
        ]
        .iter()
        .map(|r| self.fake.count(r))
        .sum()
    }

    /// Every request that reads repositories outside the listing: the
    /// batch reads (GraphQL) and the REST reads by id.
    fn reads(&self) -> u64 {
        self.per_repo_reads() + self.fake.count(routes::GRAPHQL_READ)
    }

    /// The newest change of the entry `name`, from its history.
    async fn last_change(&self, name: &str) -> Value {
        let path = format!("/api/v1/projects/{name}/history");
        let answer = get(&self.roster.url(&path)).await.expect("history");
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.json()["items"][0].clone()
    }

    async fn push_webhook(&self, repo: &Repo, before: &str, after: &str) {
        let answer = deliver(&self.roster.base, "push", push(repo, before, after)).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    }
}

fn text<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_default()
}

#[tokio::test]
async fn an_install_should_sync_every_repository_with_each_status() {
    let big = format!(
        "name: big\nowner: x\ndescription: \"{}\"\n",
        "a".repeat(300 * 1024)
    );
    let mut ids = std::collections::BTreeMap::new();
    let fake = fake_with(|fake| {
        let mut add = |name: &str, text: Option<&[u8]>| {
            let id = match text {
                Some(bytes) => {
                    let id = fake.add_repo(ACME, name);
                    fake.push_file(id, FILE, bytes);
                    id
                }
                None => fake.add_repo(ACME, name),
            };
            ids.insert(name.to_owned(), id);
        };
        add("checkout", Some(yaml("checkout-api", "Takes payments").as_bytes()));
        add(
            "billing",
            Some(b"projects:\n  - name: billing-api\n    owner: team-billing\n  - name: billing-worker\n    owner: team-billing\n"),
        );
        add("scratchpad", None);
        add("broken", Some(b"name: Not_A_Name\nowner: team-x\n"));
        add("binary", Some(b"name: \x00\xff\xfe\n"));
        add("huge", Some(big.as_bytes()));
        add("claimant-a", Some(yaml("shared", "first").as_bytes()));
        add("claimant-b", Some(yaml("shared", "second").as_bytes()));
        add("attic", Some(yaml("attic-api", "old").as_bytes()));
        fake.archive_repo(ids["attic"], true);
        fake.add_installation(2, "globex");
        let globex = fake.add_repo_with_file(2, "portal", FILE, &yaml("portal", "Globex portal"));
        ids.insert("portal".to_owned(), globex);
    })
    .await;
    let env = start(fake).await;

    let repos = env.settled(10).await;
    let status = |name: &str| {
        let full = if name == "portal" {
            "globex/portal".to_owned()
        } else {
            format!("acme/{name}")
        };
        text(&repos[&full], "status").to_owned()
    };
    for name in ["checkout", "billing", "portal"] {
        assert_eq!(status(name), "synced", "{name}: {repos:?}");
    }
    assert_eq!(status("scratchpad"), "no_file");
    for name in ["broken", "binary", "huge"] {
        assert_eq!(status(name), "invalid", "{name}: {repos:?}");
    }
    assert_eq!(status("attic"), "removed");

    // The file's problem, with its position and field.
    let broken = text(&repos["acme/broken"], "error");
    assert!(broken.starts_with("project.yaml:1:7: name: "), "{broken}");
    assert!(
        text(&repos["acme/huge"], "error").contains("256 KiB"),
        "{}",
        repos["acme/huge"]
    );
    assert!(
        text(&repos["acme/binary"], "error").contains("binary"),
        "{}",
        repos["acme/binary"]
    );
    assert_eq!(text(&repos["acme/attic"], "error"), "archived");

    // `synced_sha` is the commit GitHub shows at the head.
    let checkout = &repos["acme/checkout"];
    assert_eq!(
        checkout["synced_sha"].as_str(),
        env.fake.head(ids["checkout"]).as_deref()
    );
    assert_eq!(checkout["projects"], serde_json::json!(["checkout-api"]));
    assert_eq!(
        repos["acme/billing"]["projects"],
        serde_json::json!(["billing-api", "billing-worker"])
    );

    // One of the two claimants owns `shared`; the other names it.
    let (a, b) = (&repos["acme/claimant-a"], &repos["acme/claimant-b"]);
    let (winner, loser) = if text(a, "status") == "synced" {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(text(winner, "status"), "synced");
    assert_eq!(text(loser, "status"), "conflict");
    assert!(
        text(loser, "error").contains(text(winner, "full_name")),
        "{loser}"
    );
    let shared = env.project("shared").await.expect("shared is registered");
    assert_eq!(shared["repo"], winner["full_name"]);
    assert!(env.project("attic-api").await.is_none());

    // The listing fetched every file: no repository was read again, but
    // for the bytes of the file GitHub calls binary (one contents read, so
    // that a NUL in it would get its line and column).
    assert_eq!(
        (env.per_repo_reads(), env.fake.count(routes::CONTENTS)),
        (1, 1),
        "a listed repository was read again"
    );

    // A suspended installation: its repositories show `error`, entries kept.
    env.fake.suspend_installation(2, true);
    assert_eq!(resync(&env.roster.base).await.status, 202);
    let portal = env
        .repo_until("globex/portal", "error", |r| r["status"] == "error")
        .await;
    assert!(
        text(&portal, "error").contains("installation suspended"),
        "{portal}"
    );
    let entry = env
        .project("portal")
        .await
        .expect("entries kept while suspended");
    assert_eq!(entry["repo"], "globex/portal");

    // Unsuspended (GitHub then sends `installation.unsuspend`, which asks
    // for a listing): synced again.
    env.fake.suspend_installation(2, false);
    assert_eq!(resync(&env.roster.base).await.status, 202);
    env.repo_until("globex/portal", "synced again", |r| r["status"] == "synced")
        .await;
}

#[tokio::test]
async fn a_full_sync_should_cost_about_one_request_per_hundred_repositories() {
    const REPOS: usize = 450;
    let fake = fake_with(|fake| {
        for n in 0..REPOS {
            let name = format!("svc-{n:03}");
            if n % 3 == 0 {
                fake.add_repo_with_file(ACME, &name, FILE, &yaml(&name, "listed"));
            } else {
                fake.add_repo(ACME, &name);
            }
        }
    })
    .await;
    let env = start(fake).await;
    let repos = env.settled(REPOS).await;
    let synced = repos.values().filter(|r| r["status"] == "synced").count();
    assert_eq!(synced, REPOS / 3);

    let pages = env.fake.count(routes::GRAPHQL);
    assert_eq!(
        pages,
        REPOS.div_ceil(100) as u64,
        "one GraphQL page per 100 repositories"
    );
    assert_eq!(
        env.per_repo_reads(),
        0,
        "a listed repository was read again"
    );
    let total = env.fake.total();
    // The pages, plus the installations (at start and at the listing),
    // one installation token, and the organisation's (empty) teams and
    // members.
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 2);
    assert!(
        total <= pages + 6,
        "{total} requests for {REPOS} repositories"
    );
}

#[tokio::test]
async fn a_push_should_sync_the_new_commit() {
    let (env, id, before) = synced_checkout().await;
    let old = text(&before, "synced_sha").to_owned();
    env.fake.reset_counts();

    let sha = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "after").as_bytes());
    env.push_webhook(&Repo::new(id, ACME, "acme", "checkout"), &old, &sha)
        .await;

    let after = env
        .repo_until("acme/checkout", "the new commit", |r| {
            r["synced_sha"] == sha.as_str()
        })
        .await;
    assert_eq!(text(&after, "status"), "synced");
    let entry = env.project("checkout-api").await.expect("entry");
    assert_eq!(entry["description"], "after");
    assert_eq!(entry["source_sha"], sha.as_str());
    // The push's node id came with the webhook: one query read it all.
    assert_eq!(env.fake.count(routes::GRAPHQL_READ), 1);
    assert_eq!(env.per_repo_reads(), 0);
    let last = env.last_change("checkout-api").await;
    assert_eq!(
        (
            text(&last, "kind"),
            text(&last, "cause"),
            text(&last, "sha")
        ),
        ("changed", "push", sha.as_str()),
        "the change log must say a push made the change: {last}"
    );
}

#[tokio::test]
async fn a_change_found_by_a_resync_of_one_repository_should_say_resync() {
    let (env, id, _) = synced_checkout().await;
    let first = env.last_change("checkout-api").await;
    assert_eq!(text(&first, "cause"), "listing", "{first}");

    // The file changes without a webhook; an operator asks for a resync.
    let sha = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "after").as_bytes());
    let answer = send(
        Method::POST,
        &env.roster.url("/api/v1/repos/acme/checkout/resync"),
        &[("authorization", &format!("Bearer {API_TOKEN}"))],
        Vec::new(),
    )
    .await
    .expect("resync request");
    assert_eq!(answer.status, 202, "{}", answer.body);
    env.repo_until("acme/checkout", "the new commit", |r| {
        r["synced_sha"] == sha.as_str()
    })
    .await;
    let last = env.last_change("checkout-api").await;
    assert_eq!(
        (text(&last, "kind"), text(&last, "cause")),
        ("changed", "resync"),
        "{last}"
    );
}

#[tokio::test]
async fn a_deleted_file_should_leave_no_file_and_no_entries() {
    let mut id = 0;
    let fake = fake_with(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
    })
    .await;
    let env = start(fake).await;
    let before = env
        .repo_until("acme/checkout", "synced", |r| r["status"] == "synced")
        .await;
    assert!(env.project("checkout-api").await.is_some());

    let sha = env.fake.delete_file(id, FILE);
    env.push_webhook(
        &Repo::new(id, ACME, "acme", "checkout"),
        text(&before, "synced_sha"),
        &sha,
    )
    .await;

    let after = env
        .repo_until("acme/checkout", "no_file", |r| r["status"] == "no_file")
        .await;
    assert_eq!(after["projects"], serde_json::json!([]));
    assert!(env.project("checkout-api").await.is_none());
}

#[tokio::test]
async fn a_repository_deleted_without_a_webhook_should_be_removed_by_the_next_listing() {
    let mut id = 0;
    let fake = fake_with(|fake| {
        id = fake.add_repo_with_file(ACME, "doomed", FILE, &yaml("doomed", "x"));
        fake.add_repo_with_file(ACME, "kept", FILE, &yaml("kept", "x"));
    })
    .await;
    let env = start(fake).await;
    env.settled(2).await;

    env.fake.delete_repo(id);
    assert_eq!(resync(&env.roster.base).await.status, 202);

    let doomed = env
        .repo_until("acme/doomed", "removed", |r| r["status"] == "removed")
        .await;
    assert!(
        text(&doomed, "error").contains("no longer visible"),
        "{doomed}"
    );
    assert!(env.project("doomed").await.is_none());
    assert!(env.project("kept").await.is_some());
    let kept = env.repo("acme/kept").await.expect("kept");
    assert_eq!(kept["status"], "synced");
}

#[tokio::test]
async fn a_renamed_repository_should_keep_its_entries_under_the_new_name() {
    let mut id = 0;
    let fake = fake_with(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
    })
    .await;
    let env = start(fake).await;
    let before = env
        .repo_until("acme/checkout", "synced", |r| r["status"] == "synced")
        .await;
    let created_at = env.project("checkout-api").await.expect("entry")["created_at"].clone();

    env.fake.rename_repo(id, "payments");
    let answer = deliver(
        &env.roster.base,
        "repository",
        renamed(&Repo::new(id, ACME, "acme", "payments"), "checkout"),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.body);

    // Reconciled again (read by id), under the new name.
    let after = env
        .repo_until("acme/payments", "reconciled after the rename", |r| {
            r["status"] == "synced" && r["last_synced_at"] != before["last_synced_at"]
        })
        .await;
    assert_eq!(after["id"], before["id"]);
    assert_eq!(after["projects"], before["projects"]);
    assert_eq!(after["synced_sha"], before["synced_sha"]);
    assert!(
        env.repo("acme/checkout").await.is_none(),
        "the old name is gone"
    );
    let entry = env.project("checkout-api").await.expect("entry kept");
    assert_eq!(entry["repo"], "acme/payments");
    assert_eq!(entry["repo_id"], before["id"]);
    assert_eq!(
        entry["created_at"], created_at,
        "the same entry, not a new one"
    );
    let last = env.last_change("checkout-api").await;
    assert_eq!(
        (
            text(&last, "kind"),
            text(&last, "cause"),
            last["before"]["repo"].as_str(),
            last["after"]["repo"].as_str(),
        ),
        (
            "changed",
            "webhook",
            Some("acme/checkout"),
            Some("acme/payments")
        ),
        "a rename must reach the change log: {last}"
    );
}

#[tokio::test]
async fn github_failing_for_a_while_should_show_an_error_keep_entries_then_sync() {
    let (env, id, before) = synced_checkout().await;

    env.fake
        .inject(Fault::always(FaultKind::ServerError).on(routes::GRAPHQL_READ));
    let sha = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "after").as_bytes());
    env.push_webhook(
        &Repo::new(id, ACME, "acme", "checkout"),
        text(&before, "synced_sha"),
        &sha,
    )
    .await;

    let failed = env
        .repo_until("acme/checkout", "error", |r| r["status"] == "error")
        .await;
    let error = text(&failed, "error");
    assert!(error.contains("500") && error.contains("GitHub"), "{error}");
    assert!(failed["attempts"].as_i64().unwrap_or(0) >= 1, "{failed}");
    assert_eq!(failed["synced_sha"], before["synced_sha"]);
    let entry = env.project("checkout-api").await.expect("entries kept");
    assert_eq!(entry["description"], "before");

    env.fake.clear_faults();
    let after = env
        .repo_until("acme/checkout", "synced after the fault", |r| {
            r["synced_sha"] == sha.as_str()
        })
        .await;
    assert_eq!(text(&after, "status"), "synced");
    assert_eq!(after["attempts"], 0);
    let entry = env.project("checkout-api").await.expect("entry");
    assert_eq!(entry["description"], "after");
}

#[tokio::test]
async fn a_secondary_rate_limit_should_be_waited_out_with_entries_kept() {
    const RETRY_AFTER: u64 = 3;
    let (env, id, before) = synced_checkout().await;
    assert_eq!(env.reads(), 0);

    env.fake.inject(
        Fault::next(
            FaultKind::SecondaryRateLimit {
                retry_after: RETRY_AFTER,
            },
            1,
        )
        .on(routes::GRAPHQL_READ),
    );
    let sha = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "after").as_bytes());
    env.push_webhook(
        &Repo::new(id, ACME, "acme", "checkout"),
        text(&before, "synced_sha"),
        &sha,
    )
    .await;

    // When the refused attempt reached GitHub, and when the next request
    // about the repository did.
    let refused_at = eventually("the refused read", LIMIT, || async {
        (env.reads() >= 1).then(Instant::now)
    })
    .await;
    let failed = env
        .repo_until("acme/checkout", "error", |r| r["status"] == "error")
        .await;
    // Every request of the failed attempt has arrived by now.
    let attempt = env.reads();
    assert!(
        text(&failed, "error").contains("secondary rate limit"),
        "{failed}"
    );
    assert_eq!(failed["attempts"], 1);
    let entry = env.project("checkout-api").await.expect("entries kept");
    assert_eq!(entry["description"], "before");

    let retried_at = eventually("the retry", LIMIT, || async {
        (env.reads() > attempt).then(Instant::now)
    })
    .await;
    let waited = retried_at - refused_at;
    // Both instants are seen by polling, each up to one poll late.
    assert!(
        waited >= Duration::from_secs(RETRY_AFTER) - Duration::from_millis(100),
        "retried after {waited:?}, GitHub asked for {RETRY_AFTER} s"
    );
    let after = env
        .repo_until("acme/checkout", "synced after the wait", |r| {
            r["synced_sha"] == sha.as_str()
        })
        .await;
    assert_eq!(text(&after, "status"), "synced");
}

#[tokio::test]
async fn a_listing_failing_on_page_two_should_sweep_nothing_until_a_complete_one() {
    const REPOS: usize = 150;
    let mut doomed = 0;
    let fake = fake_with(|fake| {
        for n in 0..REPOS {
            let name = format!("svc-{n:03}");
            let id = if n % 10 == 0 {
                fake.add_repo_with_file(ACME, &name, FILE, &yaml(&name, "x"))
            } else {
                fake.add_repo(ACME, &name)
            };
            if n == 10 {
                doomed = id;
            }
        }
    })
    .await;
    let env = start(fake).await;
    env.settled(REPOS).await;
    env.drained().await;

    // Gone from GitHub, then a listing whose second page fails (both the
    // attempt and its retry).
    env.fake.delete_repo(doomed);
    env.fake
        .inject(Fault::next(FaultKind::ServerError, 2).on_page(2));
    assert_eq!(resync(&env.roster.base).await.status, 202);
    eventually("the partial listing", LIMIT, || async {
        env.roster
            .logs()
            .contains("listing incomplete; not swept")
            .then_some(())
    })
    .await;
    env.drained().await;
    let kept = env.repo("acme/svc-010").await.expect("still listed");
    assert_eq!(kept["status"], "synced", "{kept}");
    assert!(env.project("svc-010").await.is_some(), "entries kept");
    assert_eq!(
        env.reads(),
        0,
        "nothing was swept, so nothing was asked about"
    );

    // The next complete listing sweeps it.
    assert_eq!(resync(&env.roster.base).await.status, 202);
    env.repo_until("acme/svc-010", "removed", |r| r["status"] == "removed")
        .await;
    assert!(env.project("svc-010").await.is_none());
    let other = env.repo("acme/svc-020").await.expect("listed");
    assert_eq!(other["status"], "synced");
}
