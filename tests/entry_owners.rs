//! Entries' owners resolved by id, against the fake GitHub's teams and a
//! real PostgreSQL: each `owner_status`, a rename followed (the entry
//! shows the new slug, the change log says `team_renamed`, nothing is
//! removed), a deletion flagged, `require` against `warn`, a team renamed
//! twice before its webhooks arrive, and a webhook of an organisation
//! Roster does not know changing nothing.

use crate::support;
use crate::support::registry::{handler, installed_repo, queue};
use support::fake_github;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_github::directory::{self as fake_dir};
use fake_github::FakeGithub;
use prometheus_client::registry::Registry;
use roster::controller::{Handler, Lister};
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::directory::OwnersMode;
use roster::github::GithubSource;
use roster::metrics::Metrics;
use roster::project::OwnerStatus;
use roster::registry::owner_follow::follow_changes;
use roster::registry::{get_project, Entry, RegistryHandler};
use roster::source::{FileState, Observed, RepoId};
use sqlx::PgPool;

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    source: GithubSource,
    queue: Arc<PgQueue>,
}

/// A fake GitHub with installation 1 (`acme`): teams `payments`,
/// `platform` and `legacy`, member `octocat`; read by a first listing.
async fn env() -> (Env, i64, i64) {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let payments = fake.add_team(1, "payments", false);
    fake.add_team(1, "platform", false);
    let legacy = fake.add_team(1, "legacy", false);
    fake.add_member(1, "octocat");
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let source = GithubSource::connect(&fake.settings(), "project.yaml", pool.clone(), metrics)
        .await
        .expect("connect");
    source.lister().list().await.expect("listing");
    let env = Env {
        queue: queue(&pool),
        fake,
        pool,
        source,
    };
    (env, payments, legacy)
}

impl Env {
    fn handler(&self, mode: OwnersMode) -> RegistryHandler {
        handler(&self.pool, self.queue.clone()).with_owners(mode)
    }

    /// Applies `yaml` as repository `id`'s file at `sha`; the outcome.
    async fn apply(&self, mode: OwnersMode, id: i64, sha: &str, yaml: &str) -> &'static str {
        let observed = Observed::Present {
            repo: installed_repo("acme", format!("repo-{id}"), 1),
            file: FileState::Found {
                sha: sha.into(),
                bytes: yaml.as_bytes().to_vec(),
            },
        };
        self.handler(mode)
            .apply(&RepoId(id), Ok(observed))
            .await
            .expect("applied")
    }

    /// Delivers a `team` webhook as the route writes it.
    async fn deliver(&self, body: &[u8]) -> String {
        support::intake::deliver(&self.pool, &self.queue, "team", body)
            .await
            .outcome()
            .to_owned()
    }

    /// The webhook's re-read, then the follow-up of what it changed, as
    /// the two background loops do; how many entries' owners moved.
    async fn reread_and_follow(&self, mode: OwnersMode) -> usize {
        self.source.directory().pass().await.expect("re-read");
        follow_changes(&self.pool, mode).await.expect("follow")
    }

    async fn entry(&self, name: &str) -> Entry {
        get_project(&self.pool, name)
            .await
            .expect("read")
            .expect("the entry is there")
    }

    async fn entries(&self) -> i64 {
        sqlx::query_scalar("select count(*) from entries")
            .fetch_one(&self.pool)
            .await
            .expect("count")
    }

    /// The causes of the changes logged for entry `name`, oldest first.
    async fn causes(&self, name: &str) -> Vec<String> {
        sqlx::query_scalar("select cause from changes where name = $1 order by seq")
            .bind(name)
            .fetch_all(&self.pool)
            .await
            .expect("changes")
    }

    async fn rename(&self, team: i64, from: &str, to: &str) {
        self.fake.rename_team(1, team, to);
        let now = self.fake.team(1, team).expect("the team");
        let body = fake_dir::team_event(1, "acme", "edited", &now, Some(from));
        assert_eq!(self.deliver(&body).await, "queued");
    }
}

const FILE: &str = "projects:
  - name: pay
    owner: payments
  - name: plat
    owner: '@acme/Platform'
  - name: cat
    owner: '@octocat'
  - name: typo
    owner: paymnts
  - name: old
    owner: legacy
";

fn status(entry: &Entry) -> OwnerStatus {
    entry.resolved.owner_status
}

#[tokio::test]
async fn each_owner_should_store_what_it_names() {
    let (env, payments, _) = env().await;
    assert_eq!(env.apply(OwnersMode::Warn, 1, "a1", FILE).await, "synced");
    let pay = env.entry("pay").await;
    assert_eq!(status(&pay), OwnerStatus::Team);
    assert_eq!(pay.resolved.owner_team_id, Some(payments));
    assert_eq!(pay.resolved.owner_slug.as_deref(), Some("payments"));
    assert_eq!(status(&env.entry("plat").await), OwnerStatus::Team);
    let cat = env.entry("cat").await;
    assert_eq!(status(&cat), OwnerStatus::Member);
    assert_eq!(cat.resolved.owner_team_id, None);
    let typo = env.entry("typo").await;
    assert_eq!(status(&typo), OwnerStatus::Unknown);
    assert_eq!(typo.fields.owner, "paymnts", "the file's text is kept");
    // The JSON says it too.
    let json = serde_json::to_value(&pay).expect("json");
    assert_eq!(json["owner_status"], "team");
    assert_eq!(json["owner_team_id"], payments);

    // Under `off`, nothing is checked, and the next reconcile says so.
    assert_eq!(env.apply(OwnersMode::Off, 1, "a2", FILE).await, "synced");
    assert_eq!(status(&env.entry("pay").await), OwnerStatus::Unchecked);
    assert_eq!(env.entry("pay").await.resolved.owner_team_id, None);
}

#[tokio::test]
async fn a_renamed_team_should_be_followed_and_a_deleted_one_flagged_removing_nothing() {
    let (env, payments, legacy) = env().await;
    env.apply(OwnersMode::Warn, 1, "a1", FILE).await;
    let logged = env.causes("pay").await.len();
    env.rename(payments, "payments", "payments-core").await;
    env.fake.delete_team(1, legacy);
    let gone = fake_dir::Team {
        id: legacy,
        slug: "legacy".into(),
        name: "legacy".into(),
        parent: None,
        secret: false,
    };
    let body = fake_dir::team_event(1, "acme", "deleted", &gone, None);
    assert_eq!(env.deliver(&body).await, "queued");
    assert_eq!(env.reread_and_follow(OwnersMode::Warn).await, 2);

    let pay = env.entry("pay").await;
    assert_eq!(status(&pay), OwnerStatus::Renamed);
    assert_eq!(pay.resolved.owner_slug.as_deref(), Some("payments-core"));
    assert_eq!(pay.resolved.owner_team_id, Some(payments));
    assert_eq!(pay.fields.owner, "payments", "the file's text is kept");
    let old = env.entry("old").await;
    assert_eq!(status(&old), OwnerStatus::Deleted);
    assert_eq!(old.resolved.owner_team_id, Some(legacy));
    assert_eq!(
        env.entries().await,
        5,
        "nothing removed because of an owner"
    );
    let causes = env.causes("pay").await;
    assert_eq!(causes.len(), logged + 1);
    assert_eq!(causes.last().map(String::as_str), Some("team_renamed"));
    assert_eq!(
        env.causes("old").await.last().map(String::as_str),
        Some("team_deleted")
    );
    // Others did not move.
    assert_eq!(env.causes("plat").await.len(), 1);

    // Followed once: a second pass, and the unchanged file, log nothing.
    assert_eq!(
        follow_changes(&env.pool, OwnersMode::Warn)
            .await
            .expect("follow"),
        0
    );
    env.apply(OwnersMode::Warn, 1, "a1", FILE).await;
    assert_eq!(env.causes("pay").await.len(), logged + 1);
    assert_eq!(status(&env.entry("pay").await), OwnerStatus::Renamed);
}

#[tokio::test]
async fn a_team_renamed_twice_before_its_webhooks_should_show_its_last_slug() {
    let (env, payments, _) = env().await;
    env.apply(OwnersMode::Warn, 1, "a1", FILE).await;
    env.fake.rename_team(1, payments, "payments-core");
    let second = env.fake.team(1, payments).expect("team");
    env.fake.rename_team(1, payments, "money");
    let third = env.fake.team(1, payments).expect("team");
    // The newest webhook first, then the older one.
    let newest = fake_dir::team_event(1, "acme", "edited", &third, Some(&second.name));
    let older = fake_dir::team_event(1, "acme", "edited", &second, Some("payments"));
    assert_eq!(env.deliver(&newest).await, "queued");
    assert_eq!(env.deliver(&older).await, "queued");
    assert_eq!(env.reread_and_follow(OwnersMode::Warn).await, 1);
    let pay = env.entry("pay").await;
    assert_eq!(status(&pay), OwnerStatus::Renamed);
    assert_eq!(pay.resolved.owner_slug.as_deref(), Some("money"));
    assert_eq!(
        env.causes("pay").await.last().map(String::as_str),
        Some("team_renamed")
    );
}

#[tokio::test]
async fn require_should_keep_a_followed_entry_and_refuse_a_file_that_newly_names_an_old_slug() {
    let (env, payments, _) = env().await;
    let file = "name: pay\nowner: payments\n";
    assert_eq!(
        env.apply(OwnersMode::Require, 1, "a1", file).await,
        "synced"
    );
    env.rename(payments, "payments", "payments-core").await;
    env.reread_and_follow(OwnersMode::Require).await;
    // The entry followed the team: its repository stays valid.
    assert_eq!(
        env.apply(OwnersMode::Require, 1, "a2", file).await,
        "synced"
    );
    assert_eq!(status(&env.entry("pay").await), OwnerStatus::Renamed);

    // Another repository newly naming the old slug is invalid under
    // `require`, and applied (flagged) under `warn`.
    let newer = "name: pay2\nowner: payments\n";
    assert_eq!(
        env.apply(OwnersMode::Require, 2, "b1", newer).await,
        "invalid"
    );
    let error: String = sqlx::query_scalar("select error from repositories where id = 2")
        .fetch_one(&env.pool)
        .await
        .expect("error");
    assert!(
        error.contains("\"payments\" was renamed to \"payments-core\"; update the file"),
        "{error}"
    );
    assert!(get_project(&env.pool, "pay2")
        .await
        .expect("read")
        .is_none());
    assert_eq!(env.apply(OwnersMode::Warn, 2, "b1", newer).await, "synced");
    assert_eq!(status(&env.entry("pay2").await), OwnerStatus::Renamed);

    // An owner naming nobody: invalid under `require` (entries kept as
    // they were), applied and flagged under `warn`.
    let typo = "name: pay\nowner: paymnts\n";
    assert_eq!(
        env.apply(OwnersMode::Require, 1, "a3", typo).await,
        "invalid"
    );
    assert_eq!(env.entry("pay").await.fields.owner, "payments");
    assert_eq!(env.apply(OwnersMode::Warn, 1, "a3", typo).await, "synced");
    assert_eq!(status(&env.entry("pay").await), OwnerStatus::Unknown);
}

#[tokio::test]
async fn a_team_webhook_of_an_unknown_organisation_should_change_no_entry() {
    let (env, _, _) = env().await;
    env.apply(OwnersMode::Warn, 1, "a1", FILE).await;
    follow_changes(&env.pool, OwnersMode::Warn)
        .await
        .expect("follow");
    let mut before = Vec::new();
    for name in ["pay", "plat", "cat", "typo", "old"] {
        before.push(env.entry(name).await);
    }
    let stranger = fake_dir::Team {
        id: 999,
        slug: "payments".into(),
        name: "payments".into(),
        parent: None,
        secret: false,
    };
    let body = fake_dir::team_event(77, "globex", "deleted", &stranger, None);
    assert_eq!(env.deliver(&body).await, "ignored");
    assert_eq!(env.reread_and_follow(OwnersMode::Warn).await, 0);
    for entry in &before {
        assert_eq!(&env.entry(&entry.name).await, entry);
    }
    assert_eq!(
        env.causes("pay").await,
        ["reconcile"],
        "created, nothing since"
    );
}

/// `team edited (rename) webhook → entries showing the new slug`, with the
/// re-read and the follow-up running as the server runs them (each every
/// second); the p50 of a few renames is printed.
#[tokio::test]
async fn a_rename_webhook_should_reach_the_entries_within_seconds() {
    let (env, payments, _) = env().await;
    env.apply(OwnersMode::Warn, 1, "a1", FILE).await;
    let (stop, stopped) = roster::shutdown::channel();
    let reader = tokio::spawn(env.source.directory().run(stopped.wait()));
    let follower = tokio::spawn(roster::registry::owner_follow::run(
        env.pool.clone(),
        OwnersMode::Warn,
        stopped.wait(),
    ));
    let mut took = Vec::new();
    let mut slug = "payments".to_owned();
    for round in 0..5 {
        let next = format!("payments-{round}");
        let started = Instant::now();
        env.rename(payments, &slug, &next).await;
        loop {
            let pay = env.entry("pay").await;
            if pay.resolved.owner_slug.as_deref() == Some(next.as_str()) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the rename never reached the entry"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        took.push(started.elapsed());
        slug = next;
    }
    stop.stop();
    reader.await.expect("reader");
    follower.await.expect("follower");
    took.sort();
    println!(
        "team edited (rename) webhook -> entries showing the new slug: p50 {:?} (of {:?})",
        took[took.len() / 2],
        took
    );
}
