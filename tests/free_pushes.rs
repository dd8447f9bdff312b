//! Pushes that cannot have changed the project file cost no GitHub request
//! (docs/contract.md#webhooks): the real `roster serve` against the fake
//! GitHub, each push observed through the fake's request counts and the
//! registry's API.

use crate::support;
use support::fake_github;
use support::github_app;

use std::time::Duration;

use fake_github::{routes, FakeGithub, Fault, FaultKind, APP_ID, PRIVATE_KEY};
use github_app::{deliver, push, push_of_commits, resync, server_env, Repo};
use serde_json::{json, Value};
use support::http::get;
use support::server::{eventually, Roster};

const FILE: &str = "project.yaml";
const LIMIT: Duration = Duration::from_secs(30);
const ACME: i64 = 1;

fn yaml(name: &str, description: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n")
}

struct Env {
    fake: FakeGithub,
    roster: Roster,
    _dir: tempfile::TempDir,
}

/// The server, once every repository `build` made is reconciled.
async fn start(build: impl FnOnce(&FakeGithub) -> usize) -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(ACME, "acme");
    let count = build(&fake);
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let dir = tempfile::tempdir().expect("temp dir");
    let (api, graphql) = (fake.api_url().to_string(), fake.graphql_url().to_string());
    let roster = Roster::start(
        &server_env(APP_ID, PRIVATE_KEY, &api, &graphql, &url),
        dir.path(),
    )
    .await;
    let env = Env {
        fake,
        roster,
        _dir: dir,
    };
    eventually("every repository reconciled", LIMIT, || async {
        let answer = get(&env.roster.url("/api/v1/repos?limit=1000"))
            .await
            .ok()?;
        let items = answer.json()["items"].as_array()?.clone();
        let done = items.len() == count && items.iter().all(|r| r["status"] != "pending");
        done.then_some(())
    })
    .await;
    env
}

impl Env {
    /// The repository's detail (with its events and entries).
    async fn detail(&self, name: &str) -> Value {
        let answer = get(&self.roster.url(&format!("/api/v1/repos/acme/{name}")))
            .await
            .expect("the repository");
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.json()
    }

    async fn detail_until(&self, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        eventually(&format!("acme/{name}: {what}"), LIMIT, || async {
            Some(self.detail(name).await).filter(|d| check(d))
        })
        .await
    }

    /// Requests about repositories: reads (GraphQL and REST) and check runs;
    /// not the tokens, nor the App's own look at its deliveries.
    fn spent(&self) -> u64 {
        let token_and_app = self.fake.token_creations()
            + self.fake.count(routes::HOOK_DELIVERIES)
            + self.fake.count(routes::INSTALLATIONS);
        self.fake.total() - token_and_app
    }

    /// Batch reads of repositories (GraphQL).
    fn reads(&self) -> u64 {
        self.fake.count(routes::GRAPHQL_READ)
    }

    async fn deliver(&self, body: Vec<u8>) {
        let answer = deliver(&self.roster.base, "push", body).await;
        assert_eq!(answer.status, 202, "{}", answer.body);
    }
}

/// What a push may not change: status, entries, events.
fn unchanged_but_the_commit(before: &Value, after: &Value) {
    for field in ["status", "entries", "events", "error", "projects"] {
        assert_eq!(before[field], after[field], "{field}");
    }
}

fn sha(detail: &Value) -> String {
    detail["synced_sha"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_push_that_leaves_the_file_alone_should_move_the_recorded_commit_without_a_request() {
    let (mut synced, mut bare) = (0, 0);
    let env = start(|fake| {
        synced = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
        bare = fake.add_repo(ACME, "docs");
        2
    })
    .await;
    for (id, name, status) in [(synced, "checkout", "synced"), (bare, "docs", "no_file")] {
        let repo = Repo::new(id, ACME, "acme", name);
        let before = env.detail(name).await;
        assert_eq!(before["status"], status);
        let recorded = sha(&before);
        assert_eq!(
            Some(recorded.clone()),
            env.fake.head(id),
            "the head is recorded"
        );
        let spent = env.fake.total();
        let spent_on_repos = env.spent();

        // Two pushes that follow each other, changing the README only.
        let first = env.fake.push_file(id, "README.md", b"hello\n");
        let second = env
            .fake
            .push_file(id, "docs/project.yaml", b"not the file\n");
        env.deliver(push_of_commits(
            &repo,
            &recorded,
            &first,
            &[(&first, &["README.md"])],
        ))
        .await;
        env.deliver(push_of_commits(
            &repo,
            &first,
            &second,
            &[(&second, &["docs/project.yaml"])],
        ))
        .await;
        let after = env
            .detail_until(name, "the second push recorded", |d| sha(d) == second)
            .await;

        assert_eq!(
            env.spent(),
            spent_on_repos,
            "{name}: no request about a repository"
        );
        assert_eq!(
            env.fake.total() - env.fake.token_creations(),
            spent - env.fake.token_creations(),
            "{name}: no request at all, token refresh aside"
        );
        unchanged_but_the_commit(&before, &after);
        assert_ne!(after["last_synced_at"], before["last_synced_at"]);
        assert!(env.fake.check_runs(id).is_empty(), "{name}: no check run");
    }
}

#[tokio::test]
async fn a_push_that_may_have_changed_the_file_should_be_read() {
    let mut id = 0;
    let env = start(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "v0"));
        1
    })
    .await;
    let repo = Repo::new(id, ACME, "acme", "checkout");
    let many: Vec<String> = (0..2_047).map(|n| format!("{n:040x}")).collect();
    // Each push: its name, and the payload for (recorded commit, new head).
    type Payload = Box<dyn Fn(&str, &str) -> Vec<u8>>;
    let r = repo.clone();
    let touching: Payload = Box::new(move |b, a| push_of_commits(&r, b, a, &[(a, &[FILE])]));
    let r = repo.clone();
    let forced: Payload = Box::new(move |b, a| {
        let mut v: Value =
            serde_json::from_slice(&push_of_commits(&r, b, a, &[(a, &["README.md"])]))
                .unwrap_or_default();
        v["forced"] = json!(true);
        v.to_string().into_bytes()
    });
    let r = repo.clone();
    let creating: Payload = Box::new(move |_, a| {
        let zero = "0".repeat(40);
        let mut v: Value =
            serde_json::from_slice(&push_of_commits(&r, &zero, a, &[(a, &["README.md"])]))
                .unwrap_or_default();
        v["created"] = json!(true);
        v.to_string().into_bytes()
    });
    let r = repo.clone();
    let too_many: Payload = Box::new(move |b, a| {
        let mut commits: Vec<(&str, &[&str])> = many
            .iter()
            .map(|c| (c.as_str(), &["README.md"][..]))
            .collect();
        commits.push((a, &["README.md"]));
        push_of_commits(&r, b, a, &commits)
    });
    let r = repo.clone();
    let not_from_recorded: Payload = Box::new(move |_, a| {
        let elsewhere = "e".repeat(40);
        push_of_commits(&r, &elsewhere, a, &[(a, &["README.md"])])
    });
    let cases: [(&str, Payload, bool); 5] = [
        ("a commit touching the file", touching, true),
        ("forced", forced, false),
        ("creating the branch", creating, false),
        ("2,048 commits", too_many, false),
        (
            "before is not the recorded commit",
            not_from_recorded,
            false,
        ),
    ];
    for (n, (why, payload, changes_file)) in cases.into_iter().enumerate() {
        let before = env.detail("checkout").await;
        let head = if changes_file {
            env.fake
                .push_file(id, FILE, yaml("checkout-api", &format!("v{n}")).as_bytes())
        } else {
            env.fake
                .push_file(id, "README.md", format!("{n}\n").as_bytes())
        };
        let reads = env.reads();
        env.deliver(payload(&sha(&before), &head)).await;
        let after = env.detail_until("checkout", why, |d| sha(d) == head).await;
        assert_eq!(env.reads(), reads + 1, "{why}: one read");
        assert_eq!(after["status"], "synced", "{why}");
        let description = &after["entries"][0]["description"];
        if changes_file {
            assert_eq!(description, &json!(format!("v{n}")), "{why}: applied");
        } else {
            assert_eq!(description, &before["entries"][0]["description"], "{why}");
        }
    }
}

#[tokio::test]
async fn a_push_to_a_repository_in_another_status_should_be_read() {
    let (mut invalid, mut conflict, mut failing) = (0, 0, 0);
    let env = start(|fake| {
        fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
        invalid = fake.add_repo_with_file(ACME, "broken", FILE, "name: [\n");
        conflict = fake.add_repo_with_file(ACME, "copycat", FILE, &yaml("checkout-api", "y"));
        failing = fake.add_repo_with_file(ACME, "flaky", FILE, &yaml("flaky-api", "z"));
        4
    })
    .await;
    assert_eq!(env.detail("broken").await["status"], "invalid");
    assert_eq!(env.detail("copycat").await["status"], "conflict");

    for (id, name, status) in [
        (invalid, "broken", "invalid"),
        (conflict, "copycat", "conflict"),
    ] {
        let repo = Repo::new(id, ACME, "acme", name);
        let before = env.detail(name).await;
        assert_eq!(before["status"], status);
        let recorded = sha(&before);
        let head = env.fake.push_file(id, "README.md", b"2\n");
        let reads = env.reads();
        env.deliver(push_of_commits(
            &repo,
            &recorded,
            &head,
            &[(&head, &["README.md"])],
        ))
        .await;
        // A read reconciles: an event is recorded (or its count goes up).
        let after = env
            .detail_until(name, "read again", |d| {
                d["events"][0] != before["events"][0]
            })
            .await;
        assert_eq!(env.reads(), reads + 1, "{name}: one read");
        // The file is as it was: so is the status.
        assert_eq!(after["status"], status, "{name}");
    }

    // `flaky` cannot be read: status `error`, its commit as recorded. A
    // push from that commit is read (and fails again), never recorded.
    let flaky = Repo::new(failing, ACME, "acme", "flaky");
    let recorded = sha(&env.detail("flaky").await);
    env.fake
        .inject(Fault::always(FaultKind::BadGateway).on(routes::GRAPHQL_READ));
    let head = env.fake.push_file(failing, "README.md", b"1\n");
    env.deliver(push(&flaky, &recorded, &head)).await;
    env.detail_until("flaky", "error", |d| d["status"] == "error")
        .await;
    let reads = env.reads();
    let next = env.fake.push_file(failing, "README.md", b"2\n");
    env.deliver(push_of_commits(
        &flaky,
        &recorded,
        &next,
        &[(&next, &["README.md"])],
    ))
    .await;
    eventually("flaky read again", LIMIT, || async {
        (env.reads() > reads).then_some(())
    })
    .await;
    let after = env.detail("flaky").await;
    assert_eq!(
        (after["status"].clone(), sha(&after)),
        (json!("error"), recorded)
    );
    env.fake.clear_faults();

    // A repository the registry does not know yet (`pending`) is read.
    let id = env
        .fake
        .add_repo_with_file(ACME, "newcomer", FILE, &yaml("newcomer", "n"));
    let head = env.fake.head(id).unwrap_or_default();
    let reads = env.reads();
    let newcomer = Repo::new(id, ACME, "acme", "newcomer");
    env.deliver(push_of_commits(
        &newcomer,
        &"1".repeat(40),
        &head,
        &[(&head, &["README.md"])],
    ))
    .await;
    env.detail_until("newcomer", "synced", |d| d["status"] == "synced")
        .await;
    assert_eq!(env.reads(), reads + 1, "newcomer: one read");
}

#[tokio::test]
async fn a_change_a_free_push_could_not_see_should_be_applied_by_the_next_listing() {
    let mut id = 0;
    let env = start(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "old"));
        1
    })
    .await;
    let repo = Repo::new(id, ACME, "acme", "checkout");
    let recorded = sha(&env.detail("checkout").await);
    // The file changes, but the push's payload shows only the README (as a
    // payload cut short, or a commit GitHub summarised, could).
    env.fake
        .push_file(id, FILE, yaml("checkout-api", "new").as_bytes());
    let head = env.fake.push_file(id, "README.md", b"x\n");
    let reads = env.reads();
    env.deliver(push_of_commits(
        &repo,
        &recorded,
        &head,
        &[(&head, &["README.md"])],
    ))
    .await;
    let moved = env
        .detail_until("checkout", "the push recorded", |d| sha(d) == head)
        .await;
    assert_eq!(env.reads(), reads, "decided without a read");
    assert_eq!(moved["entries"][0]["description"], "old");

    // The listing compares the file, not the commit: it applies the change.
    let answer = resync(&env.roster.base).await;
    assert!(answer.status.is_success(), "{}", answer.body);
    let listed = env
        .detail_until("checkout", "the new file applied", |d| {
            d["entries"][0]["description"] == "new"
        })
        .await;
    assert_eq!(listed["status"], "synced");
    assert_eq!(sha(&listed), head);
}

#[tokio::test]
async fn a_project_file_that_is_a_symbolic_link_should_be_invalid() {
    let mut id = 0;
    let env = start(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
        fake.push_file(
            id,
            "config/real.yaml",
            yaml("checkout-api", "linked").as_bytes(),
        );
        1
    })
    .await;
    let repo = Repo::new(id, ACME, "acme", "checkout");
    let recorded = sha(&env.detail("checkout").await);
    let head = env.fake.push_symlink(id, FILE, "config/real.yaml");
    env.deliver(push_of_commits(
        &repo,
        &recorded,
        &head,
        &[(&head, &[FILE])],
    ))
    .await;
    let after = env
        .detail_until("checkout", "invalid", |d| d["status"] == "invalid")
        .await;
    let error = after["error"].as_str().unwrap_or_default();
    assert!(error.contains("symbolic link"), "{error}");
    // Entries stay as they were while the file is invalid.
    assert_eq!(after["entries"][0]["description"], "x");
}

#[tokio::test]
async fn a_default_branch_check_run_should_be_posted_only_when_the_file_changed() {
    let mut id = 0;
    let env = start(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "v0"));
        1
    })
    .await;
    let repo = Repo::new(id, ACME, "acme", "checkout");

    // A README push that is read all the same (forced): no check run.
    let recorded = sha(&env.detail("checkout").await);
    let readme = env.fake.push_file(id, "README.md", b"x\n");
    let reads = env.reads();
    let mut forced: Value = serde_json::from_slice(&push_of_commits(
        &repo,
        &recorded,
        &readme,
        &[(&readme, &["README.md"])],
    ))
    .unwrap_or_default();
    forced["forced"] = json!(true);
    env.deliver(forced.to_string().into_bytes()).await;
    env.detail_until("checkout", "the README push read", |d| sha(d) == readme)
        .await;
    assert_eq!(env.reads(), reads + 1);

    // A push changing the file: one run, on its commit.
    let changed = env
        .fake
        .push_file(id, FILE, yaml("checkout-api", "v1").as_bytes());
    env.deliver(push_of_commits(
        &repo,
        &readme,
        &changed,
        &[(&changed, &[FILE])],
    ))
    .await;
    env.detail_until("checkout", "the file applied", |d| sha(d) == changed)
        .await;
    eventually("the check run posted", LIMIT, || async {
        (!env.fake.check_runs_on(id, &changed).is_empty()).then_some(())
    })
    .await;
    assert_eq!(env.fake.check_runs_on(id, &changed).len(), 1);
    assert!(
        env.fake.check_runs_on(id, &readme).is_empty(),
        "none on the README push"
    );
    assert_eq!(env.fake.check_runs(id).len(), 1, "one run in all");
}

/// A worker that read the repository before a push, and writes after the
/// push was decided without a read, would put the older commit back: the
/// push makes it run again, and the run reads the push's commit.
#[tokio::test]
async fn a_free_push_while_a_worker_holds_the_repository_should_not_be_undone() {
    let mut id = 0;
    let env = start(|fake| {
        id = fake.add_repo_with_file(ACME, "checkout", FILE, &yaml("checkout-api", "x"));
        1
    })
    .await;
    let repo = Repo::new(id, ACME, "acme", "checkout");
    let recorded = sha(&env.detail("checkout").await);
    // A resync: the worker reads the repository at once, and the answer
    // reaches it three seconds later.
    env.fake.reset_counts();
    env.fake.inject(
        Fault::next(FaultKind::LateAnswer(Duration::from_secs(3)), 1).on(routes::GRAPHQL_READ),
    );
    let answer = support::http::send(
        axum::http::Method::POST,
        &env.roster.url("/api/v1/repos/acme/checkout/resync"),
        &[(
            "authorization",
            &format!("Bearer {}", github_app::API_TOKEN),
        )],
        Vec::new(),
    )
    .await
    .expect("resync");
    assert_eq!(answer.status, 202, "{}", answer.body);
    eventually("the worker's read", LIMIT, || async {
        (env.reads() > 0).then_some(())
    })
    .await;
    // Meanwhile a push that leaves the file alone.
    let after = env.fake.push_file(id, "README.md", b"hello\n");
    env.deliver(push_of_commits(
        &repo,
        &recorded,
        &after,
        &[(&after, &["README.md"])],
    ))
    .await;
    // The worker's older read is written after the push was recorded; the
    // repository is then read again and the push's commit is recorded.
    eventually("a second read after the worker's", LIMIT, || async {
        (env.reads() >= 2).then_some(())
    })
    .await;
    let detail = env
        .detail_until("checkout", "the push's commit recorded", |d| {
            sha(d) == after
        })
        .await;
    assert_eq!(detail["status"], "synced");
}
