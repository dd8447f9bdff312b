//! The organisation's directory against the fake GitHub and a real
//! PostgreSQL: teams and members read by GraphQL with the listing, page by
//! page; kept current by what `team`, `membership` and `organization`
//! webhooks say, one team read when deliveries about it coalesce; a 403
//! turning owner checking off; and the local folder's `teams.yaml`.

use crate::support;
use support::fake_github;
use support::registry::queue;

use std::sync::Arc;

use fake_github::directory::{self as fake_dir, org_id};
use fake_github::{routes, FakeGithub, Fault, FaultKind};
use prometheus_client::registry::Registry;
use roster::controller::Lister;
use roster::db::queue::PgQueue;
use roster::db::testing::fresh_database;
use roster::directory::{resolve, Directory, DirectoryDb, Resolution};
use roster::github::GithubSource;
use roster::intake::event;
use roster::intake::write::Intake;
use roster::metrics::Metrics;
use sqlx::PgPool;

struct Env {
    fake: FakeGithub,
    pool: PgPool,
    source: GithubSource,
    db: DirectoryDb,
    queue: Arc<PgQueue>,
}

/// A fake GitHub with installation 1 (`acme`) and a fresh database.
async fn env() -> Env {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let source = GithubSource::connect(&fake.settings(), "project.yaml", pool.clone(), metrics)
        .await
        .expect("connect");
    Env {
        db: DirectoryDb::new(pool.clone()),
        queue: queue(&pool),
        fake,
        pool,
        source,
    }
}

impl Env {
    async fn list(&self) {
        self.source.lister().list().await.expect("listing");
    }

    async fn directory(&self, installation: i64) -> Directory {
        self.db
            .load(org_id(installation))
            .await
            .expect("load")
            .expect("the organisation is known")
    }

    /// Writes a delivery as the webhook route does; its outcome.
    async fn deliver(&self, name: &str, body: &[u8]) -> Intake {
        support::intake::deliver(&self.pool, &self.queue, name, body).await
    }

    /// Runs the re-reads webhooks asked for, as the background loop does.
    async fn reread(&self) -> usize {
        self.source.directory().pass().await.expect("pass")
    }

    async fn team(&self, installation: i64, id: i64) -> fake_dir::Team {
        self.fake.team(installation, id).expect("the team")
    }
}

fn slugs(dir: &Directory) -> Vec<String> {
    let mut slugs: Vec<String> = dir
        .teams
        .iter()
        .filter(|t| !t.deleted)
        .map(|t| t.team.slug.clone())
        .collect();
    slugs.sort();
    slugs
}

#[tokio::test]
async fn the_listing_should_read_teams_and_members_100_a_page() {
    let env = env().await;
    env.fake.add_teams(1, 249);
    let secret = env.fake.add_team(1, "security", true);
    let parent = env.fake.add_team(1, "engineering", false);
    env.fake.nest_team(1, secret, parent);
    env.fake.add_members(1, 150);
    env.fake.reset_counts();

    env.list().await;

    let dir = env.directory(1).await;
    assert_eq!(dir.login, "acme");
    assert_eq!(dir.teams.len(), 251);
    assert_eq!(dir.members.len(), 150);
    assert_eq!(dir.unchecked, None);
    let security = dir
        .teams
        .iter()
        .find(|t| t.team.id == secret)
        .expect("the secret team");
    assert!(security.team.secret);
    assert_eq!(security.team.parent_id, Some(parent));
    // 3 pages of teams, 2 of members.
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 5);
    assert_eq!(
        resolve(&dir, "@acme/team-7"),
        Resolution::Team {
            id: dir
                .teams
                .iter()
                .find(|t| t.team.slug == "team-7")
                .unwrap()
                .team
                .id,
            slug: "team-7".into()
        }
    );
    assert_eq!(resolve(&dir, "@user-3").status(), "member");
}

#[tokio::test]
async fn ten_thousand_teams_should_be_read_in_pages_and_a_stopped_read_should_lose_nothing() {
    let env = env().await;
    env.fake.add_teams(1, 10_000);
    env.fake.reset_counts();
    env.list().await;
    assert_eq!(env.directory(1).await.teams.len(), 10_000);
    assert_eq!(
        env.fake.count(routes::GRAPHQL_DIRECTORY),
        100 + 1,
        "100 pages of teams, one (empty) of members"
    );

    // Half the teams go, and the next read breaks on page 30: each page is
    // written as it arrives, and nothing is marked deleted by a read that
    // did not finish.
    for id in env
        .directory(1)
        .await
        .teams
        .iter()
        .map(|t| t.team.id)
        .filter(|id| id % 2 == 0)
    {
        env.fake.delete_team(1, id);
    }
    env.fake
        .inject(Fault::always(FaultKind::ServerError).on_directory_page(30));
    env.list().await;
    let dir = env.directory(1).await;
    assert_eq!(dir.teams.iter().filter(|t| !t.deleted).count(), 10_000);
    let accounts = env.db.accounts().await.expect("accounts");
    let error = accounts[0].read_error.as_deref().unwrap_or_default();
    assert!(error.contains("500"), "{error}");

    // Within its backoff the next listing leaves the directory alone;
    // once it has passed, the read works.
    env.fake.clear_faults();
    env.fake.reset_counts();
    env.list().await;
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 0);
    sqlx::query("update directory_orgs set claimed_until = null")
        .execute(&env.pool)
        .await
        .expect("the backoff has passed");
    env.list().await;
    let dir = env.directory(1).await;
    assert_eq!(dir.teams.iter().filter(|t| !t.deleted).count(), 5_000);
    assert_eq!(dir.teams.len(), 10_000, "deleted teams are kept, flagged");
    assert_eq!(env.db.accounts().await.unwrap()[0].read_error, None);
}

#[tokio::test]
async fn a_team_renamed_twice_before_its_webhooks_arrive_should_end_with_what_github_says() {
    let env = env().await;
    let id = env.fake.add_team(1, "payments", false);
    env.list().await;
    let first = env.team(1, id).await;
    env.fake.rename_team(1, id, "payments-core");
    let second = env.team(1, id).await;
    env.fake.rename_team(1, id, "money");
    let third = env.team(1, id).await;
    // The webhooks arrive late, the newest first, and coalesce: their
    // order is not known, so the payload last received is written and the
    // one team is read, which sees it as it is now.
    let newest = fake_dir::team_event(1, "acme", "edited", &third, Some(&second.name));
    let older = fake_dir::team_event(1, "acme", "edited", &second, Some(&first.name));
    assert_eq!(env.deliver("team", &newest).await.outcome(), "queued");
    assert_eq!(env.deliver("team", &older).await.outcome(), "queued");
    env.fake.reset_counts();
    assert_eq!(env.reread().await, 2, "one change written, one team read");
    assert_eq!(
        env.fake.count(routes::GRAPHQL_DIRECTORY),
        1,
        "the one team, not the organisation's"
    );

    let dir = env.directory(1).await;
    assert_eq!(slugs(&dir), ["money"]);
    assert_eq!(
        resolve(&dir, "payments"),
        Resolution::Renamed {
            id,
            from: "payments".into(),
            to: "money".into(),
            secret: false,
        }
    );
    assert_eq!(
        resolve(&dir, "money"),
        Resolution::Team {
            id,
            slug: "money".into()
        }
    );
    // Nothing more asked: the next pass reads nothing.
    assert_eq!(env.reread().await, 0);
}

#[tokio::test]
async fn a_deleted_team_should_resolve_as_deleted_and_members_follow_their_webhooks() {
    let env = env().await;
    let id = env.fake.add_team(1, "legacy", false);
    let alice = env.fake.add_member(1, "alice");
    env.list().await;
    let team = env.team(1, id).await;

    env.fake.delete_team(1, id);
    env.deliver(
        "team",
        &fake_dir::team_event(1, "acme", "deleted", &team, None),
    )
    .await;
    env.fake.remove_member(1, alice);
    let bob = env.fake.add_member(1, "bob");
    env.deliver(
        "organization",
        &fake_dir::member_event(1, "acme", "member_removed", (alice, "alice")),
    )
    .await;
    env.deliver(
        "membership",
        &fake_dir::membership_event(1, "acme", "added", &team, (bob, "bob")),
    )
    .await;
    env.fake.reset_counts();
    assert_eq!(env.reread().await, 3, "three changes written");
    assert_eq!(env.fake.total(), 0, "from the payloads alone");

    let dir = env.directory(1).await;
    assert_eq!(
        resolve(&dir, "legacy"),
        Resolution::Deleted {
            id,
            slug: "legacy".into()
        }
    );
    assert_eq!(resolve(&dir, "@alice").status(), "unknown");
    assert_eq!(resolve(&dir, "@bob").status(), "member");
}

#[tokio::test]
async fn a_renamed_organisation_should_still_resolve_its_old_name() {
    let env = env().await;
    let id = env.fake.add_team(1, "platform", false);
    env.list().await;
    env.fake.rename_account(1, "acme-corp");
    let answer = env
        .deliver(
            "organization",
            &fake_dir::renamed_event(1, "acme-corp", "acme"),
        )
        .await;
    assert_eq!(answer.outcome(), "queued");

    let dir = env.directory(1).await;
    assert_eq!(dir.login, "acme-corp");
    assert_eq!(
        resolve(&dir, "@acme/platform"),
        Resolution::Renamed {
            id,
            from: "@acme/platform".into(),
            to: "@acme-corp/platform".into(),
            secret: false,
        }
    );
    // The next listing reads it under its new name.
    env.list().await;
    assert_eq!(env.directory(1).await.login, "acme-corp");
    assert_eq!(slugs(&env.directory(1).await), ["platform"]);
    let by_old = env.db.load_by_login("ACME").await.expect("load");
    assert_eq!(by_old.map(|d| d.org_id), Some(org_id(1)));
}

#[tokio::test]
async fn webhooks_of_an_organisation_roster_does_not_know_should_be_ignored_and_change_nothing() {
    let env = env().await;
    env.fake.add_team(1, "platform", false);
    env.list().await;
    let before = env.directory(1).await;
    let stranger = fake_dir::Team {
        id: 999,
        slug: "intruders".into(),
        name: "intruders".into(),
        parent: None,
        secret: false,
    };
    for (name, body) in [
        (
            "team",
            fake_dir::team_event(77, "globex", "created", &stranger, None),
        ),
        (
            "organization",
            fake_dir::renamed_event(77, "globex-2", "globex"),
        ),
        (
            "organization",
            fake_dir::member_event(77, "globex", "member_added", (5, "x")),
        ),
    ] {
        let intake = env.deliver(name, &body).await;
        assert_eq!(intake.outcome(), "ignored", "{name}");
        let reason = intake.ignored.unwrap_or_default();
        assert!(
            reason.contains("globex") && reason.contains("not known"),
            "{reason}"
        );
    }
    assert_eq!(env.reread().await, 0);
    assert_eq!(env.directory(1).await, before);
    assert_eq!(env.db.load(org_id(77)).await.expect("load"), None);
    assert_eq!(env.db.accounts().await.expect("accounts").len(), 1);

    // A payload without a valid organisation id is refused whole.
    let mut bad: serde_json::Value =
        serde_json::from_slice(&fake_dir::team_event(1, "acme", "created", &stranger, None))
            .unwrap();
    bad["organization"]["id"] = serde_json::json!(-4);
    let error = event::parse("team", bad.to_string().as_bytes()).expect_err("refused");
    assert!(error.to_string().contains("organization id"), "{error}");
}

#[tokio::test]
async fn a_403_on_the_teams_should_turn_owner_checking_off_until_the_permission_comes() {
    let env = env().await;
    env.fake.add_team(1, "platform", false);
    env.fake.forbid_members(1, true);
    env.list().await;
    env.list().await;
    let dir = env.directory(1).await;
    assert_eq!(resolve(&dir, "platform"), Resolution::Unchecked);
    let accounts = env.db.accounts().await.expect("accounts");
    let reason = accounts[0].off_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("not accessible"), "{reason}");
    assert_eq!(accounts[0].read_error, None, "a refusal is not a failure");

    env.fake.forbid_members(1, false);
    env.list().await;
    let dir = env.directory(1).await;
    assert_eq!(resolve(&dir, "platform").status(), "team");
    assert_eq!(env.db.accounts().await.unwrap()[0].off_reason, None);
}

#[tokio::test]
async fn a_personal_account_should_be_known_but_its_owners_unchecked() {
    let env = env().await;
    env.fake.add_personal_installation(2, "someone");
    env.fake.reset_counts();
    env.list().await;
    // Only the organisation is read (one empty page of teams and members).
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 2);
    let dir = env.directory(2).await;
    assert_eq!(resolve(&dir, "@someone").status(), "member");
    assert_eq!(resolve(&dir, "platform"), Resolution::Unchecked);
}

#[tokio::test]
async fn the_local_teams_file_should_fill_the_directory_and_a_malformed_one_lose_nothing() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let db = DirectoryDb::new(pool);
    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("teams.yaml");
    std::fs::write(
        &file,
        "teams:\n  - slug: payments\n    name: Payments\n    members: [alice]\n  - slug: platform\n",
    )
    .unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(slugs(&local), ["payments", "platform"]);
    assert_eq!(resolve(&local, "@local/payments").status(), "team");
    assert_eq!(resolve(&local, "@alice").status(), "member");

    std::fs::write(&file, "teams:\n  - slug: payments\n  - name: no slug\n").unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    assert_eq!(
        db.load(0).await.unwrap(),
        Some(local.clone()),
        "nothing lost"
    );
    let error = db.accounts().await.unwrap()[0]
        .read_error
        .clone()
        .unwrap_or_default();
    assert_eq!(error, "teams.yaml:3:5: teams[2]: slug is required");

    std::fs::write(&file, "teams:\n  - slug: payments\n").unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(slugs(&local), ["payments"]);
    assert_eq!(resolve(&local, "platform").status(), "deleted");
    assert_eq!(db.accounts().await.unwrap()[0].read_error, None);
}

#[tokio::test]
async fn the_example_organisation_should_have_exactly_one_owner_that_names_nobody() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let db = DirectoryDb::new(pool);
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/org");
    assert!(roster::source::dir::teams::sync_once(&examples, &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(db.accounts().await.unwrap()[0].read_error, None);
    let mut unknown = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&examples).unwrap() {
        let Ok(text) = std::fs::read_to_string(entry.unwrap().path().join("project.yaml")) else {
            continue;
        };
        for line in text.lines() {
            let Some(owner) = line.trim().strip_prefix("owner:") else {
                continue;
            };
            let owner = owner.trim().trim_matches('"');
            if !owner.is_empty() && resolve(&local, owner).status() != "team" {
                unknown.insert(owner.to_owned());
            }
        }
    }
    assert_eq!(unknown.into_iter().collect::<Vec<_>>(), ["team-discovery"]);
}

#[tokio::test]
async fn a_folder_without_teams_yaml_should_have_no_directory_and_an_empty_one_no_team() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let db = DirectoryDb::new(pool);
    let folder = tempfile::tempdir().expect("temp dir");
    let file = folder.path().join("teams.yaml");

    // No teams.yaml: nothing to check owners against.
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(resolve(&local, "payments"), Resolution::Unchecked);
    assert_eq!(resolve(&local, "@alice"), Resolution::Unchecked);

    // An empty teams.yaml is a directory that has no team.
    std::fs::write(&file, "").unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(resolve(&local, "payments").status(), "unknown");
    assert_eq!(db.accounts().await.unwrap()[0].off_reason, None);

    std::fs::write(&file, "teams:\n  - slug: payments\n").unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(resolve(&local, "payments").status(), "team");

    // The file taken away again: owners are unchecked once more.
    std::fs::remove_file(&file).unwrap();
    assert!(roster::source::dir::teams::sync_once(folder.path(), &db).await);
    let local = db.load(0).await.unwrap().expect("the local account");
    assert_eq!(resolve(&local, "payments"), Resolution::Unchecked);
}

#[tokio::test]
async fn owners_of_a_folder_without_teams_yaml_should_be_shown_unchecked_to_a_reader_without_credentials(
) {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use support::router::{self, send, Options};

    let options = Options {
        api_token: None,
        github_web_url: None,
    };
    let f = router::fixture(options, |_, _| {}).await;
    let folder = tempfile::tempdir().expect("temp dir");
    support::example_org::copy(folder.path(), &["teams.yaml"]);
    support::example_org::load_folder(folder.path(), &f.pool, f.queue.clone()).await;

    let get = |uri: &str| Request::get(uri).body(Body::empty()).expect("request");
    let answer = send(&f.app, get("/api/v1/projects/checkout-api")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let entry = answer.json();
    assert_eq!(entry["owner"], "team-payments", "{entry:#}");
    assert_eq!(entry["owner_status"], "unchecked", "{entry:#}");

    // Not one entry is hidden: each owner reads as its file writes it.
    let page = send(&f.app, get("/api/v1/projects?limit=1000"))
        .await
        .json();
    let items = page["items"].as_array().expect("items");
    assert!(items.len() >= 10, "{page:#}");
    for item in items {
        assert_eq!(item["owner_status"], "unchecked", "{item:#}");
    }
    let hidden: i64 =
        sqlx::query_scalar("select count(*) from entries where owner_status <> 'unchecked'")
            .fetch_one(&f.pool)
            .await
            .expect("count");
    assert_eq!(hidden, 0);
}
