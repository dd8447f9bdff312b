//! The organisation's directory pays for what changed: a `team` webhook
//! costs what its payload cannot say (one team read when deliveries about
//! it coalesce), never a read of the whole organisation; whole reads keep
//! the sync's reserve of the budget; a failing read backs off; a name
//! PostgreSQL cannot store is skipped, not a failure of the read.
//!
//! Before: each `team` webhook re-read every team (6 pages for 600
//! teams, 51 for 5,000), 20 renames among 600 teams cost 120 queries, a
//! storm with 1,000 GraphQL points left spent them all and a push waited
//! for the window's reset; a failing read was repeated every 30 s.
//!
//! Time is driven by the test: one directory pass stands for one second
//! of the loop ([`roster::github::directory::POLL_INTERVAL`]), and a
//! backoff's end is reached by moving its deadline, never by sleeping.

use crate::checks::{env, yaml, Env, ACME, FILE};
use crate::support;
use support::fake_github::directory::{self as fake_dir, org_id};
use support::fake_github::{routes, Fault, FaultKind};

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use roster::controller::Lister;
use roster::directory::{resolve, Directory, DirectoryDb, Part, Resolution, Rows};

const TEAMS: usize = 600;

/// 20 renames over 30 s: (tenths of a second, which team). Two teams are
/// renamed twice within one second, and those deliveries arrive newest
/// first: their order cannot be told from the payloads.
const STORM: [(u32, usize); 20] = [
    (0, 3),
    (15, 41),
    (30, 77),
    (45, 120),
    (60, 166),
    (75, 203),
    (90, 250),
    (94, 250),
    (120, 288),
    (135, 301),
    (150, 347),
    (165, 390),
    (180, 412),
    (195, 455),
    (198, 455),
    (225, 498),
    (240, 530),
    (255, 561),
    (270, 577),
    (285, 599),
];

/// Teams renamed twice within one pass in [`STORM`].
const COALESCED: u64 = 2;

async fn list(env: &Env) {
    env.source.lister().list().await.expect("listing");
}

async fn pass(env: &Env) -> usize {
    env.source.directory().pass().await.expect("directory pass")
}

async fn directory(env: &Env) -> Directory {
    DirectoryDb::new(env.pool.clone())
        .load(org_id(ACME))
        .await
        .expect("load")
        .expect("the organisation is known")
}

/// Every team's slug, by id, as GitHub has it now.
fn fake_slugs(env: &Env, ids: &[i64]) -> BTreeMap<i64, String> {
    ids.iter()
        .filter_map(|id| Some((*id, env.fake.team(ACME, *id)?.slug)))
        .collect()
}

fn roster_slugs(dir: &Directory) -> BTreeMap<i64, String> {
    dir.teams
        .iter()
        .filter(|t| !t.deleted)
        .map(|t| (t.team.id, t.team.slug.clone()))
        .collect()
}

/// The teams whose slug differs from GitHub's: (id, Roster's, GitHub's).
fn differences(
    dir: &Directory,
    github: &BTreeMap<i64, String>,
) -> Vec<(i64, Option<String>, String)> {
    let roster = roster_slugs(dir);
    github
        .iter()
        .filter(|(id, slug)| roster.get(id) != Some(slug))
        .map(|(id, slug)| (*id, roster.get(id).cloned(), slug.clone()))
        .collect()
}

/// How long the low budget of the storm lasts: enough for the storm, which
/// takes a fraction of a second, and short enough to wait for its end.
const LOW_WINDOW: Duration = Duration::from_secs(8);

/// Ends the backoff or the wait of every directory read now, as if that
/// much time had passed.
async fn time_passes(env: &Env) {
    sqlx::query("update directory_orgs set claimed_until = now() - interval '1 second'")
        .execute(&env.pool)
        .await
        .expect("end the waits");
    sqlx::query("update directory_changes set claimed_until = now() - interval '1 second'")
        .execute(&env.pool)
        .await
        .expect("end the waits");
}

/// An organisation of 600 teams, listed (its directory read whole).
async fn org() -> (Env, Vec<i64>) {
    let env = env().await;
    env.fake.add_teams(ACME, TEAMS);
    list(&env).await;
    let ids: Vec<i64> = roster_slugs(&directory(&env).await).into_keys().collect();
    assert_eq!(ids.len(), TEAMS);
    assert_eq!(fake_slugs(&env, &ids).len(), TEAMS);
    (env, ids)
}

/// Runs the storm: each second, the renames of that second reach the
/// webhook route (newest first), then the directory loop passes once.
/// `during` runs after the first `at` renames.
async fn storm(env: &Env, ids: &[i64], at: usize, during: impl std::future::Future<Output = ()>) {
    let mut during = Some(during);
    let mut renamed = 0;
    for second in 1..=31u32 {
        let mut bodies = Vec::new();
        for (n, (tenths, team)) in STORM.iter().enumerate() {
            if (second - 1) * 10 <= *tenths && *tenths < second * 10 {
                let id = ids[*team];
                let before = env.fake.team(ACME, id).expect("the team");
                env.fake.rename_team(ACME, id, &format!("renamed-{n}"));
                let after = env.fake.team(ACME, id).expect("the team");
                bodies.push(fake_dir::team_event(
                    ACME,
                    "acme",
                    "edited",
                    &after,
                    Some(&before.name),
                ));
            }
        }
        for body in bodies.into_iter().rev() {
            env.deliver("team", body).await;
            renamed += 1;
            if renamed == at {
                if let Some(during) = during.take() {
                    during.await;
                }
            }
        }
        pass(env).await;
    }
}

#[tokio::test]
async fn twenty_renames_over_thirty_seconds_among_600_teams_should_cost_at_most_25_queries() {
    let (env, ids) = org().await;
    env.fake.reset_counts();

    storm(&env, &ids, 0, async {}).await;

    let queries = env.fake.count(routes::GRAPHQL_DIRECTORY);
    println!(
        "20 renames over 30 s among {TEAMS} teams: {queries} directory queries ({COALESCED} teams renamed twice within a second)"
    );
    assert!(queries <= 25, "{queries} queries");
    assert_eq!(
        queries, COALESCED,
        "one team read per coalesced rename, nothing else"
    );
    assert_eq!(env.fake.total(), queries, "no other request at all");
    let dir = directory(&env).await;
    let stale = differences(&dir, &fake_slugs(&env, &ids));
    assert!(stale.is_empty(), "not as GitHub says: {stale:?}");
    // The old slug of a team renamed once follows it by id.
    assert_eq!(
        resolve(&dir, "team-3"),
        Resolution::Renamed {
            id: ids[3],
            from: "team-3".into(),
            to: "renamed-0".into(),
            secret: false,
        }
    );
    // Nothing is left to do.
    assert_eq!(pass(&env).await, 0);
}

#[tokio::test]
async fn a_push_during_a_rename_storm_with_a_low_budget_should_sync_at_once() {
    let (env, ids) = org().await;
    let repo = env
        .fake
        .add_repo_with_file(ACME, "amp", FILE, &yaml("amp", "v1"));
    list(&env).await;
    // 1,000 GraphQL points left of 5,000 until a reset a few seconds away
    // (Roster learns a higher count only once the reset has passed, as on
    // GitHub): the sync keeps half.
    let reset_at = Instant::now() + LOW_WINDOW;
    env.fake
        .set_budget(ACME, "graphql", 5_000, 1_000, LOW_WINDOW);
    env.fake.set_budget(ACME, "core", 5_000, 1_000, LOW_WINDOW);
    // Roster learns it from the next answers.
    list(&env).await;
    assert_eq!(env.reconcile(repo).await, "synced");
    env.fake.reset_counts();

    let synced = std::cell::Cell::new(None);
    storm(&env, &ids, 10, async {
        // A listing's whole read of the directory, asked mid-storm, is
        // put off to the reset; the push syncs at once.
        list(&env).await;
        env.fake
            .push_file(repo, FILE, yaml("amp", "pushed").as_bytes());
        let started = Instant::now();
        assert_eq!(env.reconcile(repo).await, "synced");
        synced.set(Some(started.elapsed()));
    })
    .await;

    let took = synced.get().expect("the push was reconciled");
    let description: Option<String> =
        sqlx::query_scalar("select description from entries where name = 'amp'")
            .fetch_one(&env.pool)
            .await
            .expect("entry");
    assert_eq!(description.as_deref(), Some("pushed"));
    assert_eq!(
        env.fake.count(routes::GRAPHQL_DIRECTORY),
        0,
        "the directory spent nothing below the sync's reserve"
    );
    println!(
        "push during a storm of 20 renames with 1,000 of 5,000 GraphQL points left: synced in {took:?}; the directory spent 0 queries, the sync {} requests",
        env.fake.total()
    );
    // The renames were written from their payloads all the same.
    let dir = directory(&env).await;
    assert_eq!(resolve(&dir, "renamed-0").status(), "team");
    assert_eq!(resolve(&dir, "renamed-19").status(), "team");
    // The reads it put off wait for the reset, not a fixed retry.
    let waits: Vec<f64> = sqlx::query_scalar(
        "select extract(epoch from claimed_until - now())::float8 from directory_orgs
         union all
         select extract(epoch from claimed_until - now())::float8 from directory_changes",
    )
    .fetch_all(&env.pool)
    .await
    .expect("waits");
    assert_eq!(waits.len(), 1 + COALESCED as usize, "{waits:?}");
    let left = reset_at
        .saturating_duration_since(Instant::now())
        .as_secs_f64();
    assert!(
        waits.iter().all(|w| *w > left - 2.0),
        "they wait for the reset, {left:.1} s away: {waits:?}"
    );

    // Once the reset has passed (a new window, an hour long) they go, and
    // the directory ends as GitHub has it.
    tokio::time::sleep_until(reset_at.into()).await;
    env.fake
        .set_budget(ACME, "graphql", 5_000, 5_000, Duration::from_secs(3_600));
    list(&env).await;
    time_passes(&env).await;
    pass(&env).await;
    let stale = differences(&directory(&env).await, &fake_slugs(&env, &ids));
    assert!(stale.is_empty(), "{stale:?}");
    assert_eq!(pass(&env).await, 0, "nothing left");
}

/// The account's directory read state: (consecutive failures, seconds
/// until the next try, the recorded error).
async fn read_state(env: &Env) -> (i32, f64, Option<String>) {
    sqlx::query_as(
        "select read_failures, coalesce(extract(epoch from claimed_until - now())::float8, 0),
                read_error
         from directory_orgs where org_id = $1",
    )
    .bind(org_id(ACME))
    .fetch_one(&env.pool)
    .await
    .expect("read state")
}

#[tokio::test]
async fn a_failing_directory_read_should_back_off_from_30_seconds_doubling() {
    let env = env().await;
    env.fake.add_teams(ACME, 250);
    list(&env).await;
    // GitHub fails the second page of teams from now on.
    env.fake
        .inject(Fault::always(FaultKind::ServerError).on_directory_page(2));
    env.fake.reset_counts();
    list(&env).await;
    let per_read = env.fake.count(routes::GRAPHQL_DIRECTORY);
    assert_eq!(per_read, 3, "members, then teams up to the failing page");

    let mut waits = Vec::new();
    for failures in 1..=4 {
        let (count, wait, error) = read_state(&env).await;
        assert_eq!(count, failures);
        assert!(error.unwrap_or_default().contains("500"));
        waits.push(wait);
        // Within the backoff, neither the loop nor a listing reads it.
        env.fake.reset_counts();
        for _ in 0..5 {
            pass(&env).await;
        }
        list(&env).await;
        assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 0);
        time_passes(&env).await;
        pass(&env).await;
        assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), per_read);
    }
    // 30 s, 60 s, 120 s, 240 s, each within its ±20 % jitter.
    for (n, wait) in waits.iter().enumerate() {
        let nominal = 30.0 * 2f64.powi(n as i32);
        assert!(
            *wait >= nominal * 0.8 - 1.0 && *wait <= nominal * 1.2,
            "failure {}: {wait} s",
            n + 1
        );
    }
    println!("a failing read of the directory is tried again after {waits:.0?} s");

    // It works again: the count starts over, the error goes, and nothing
    // more is asked.
    env.fake.clear_faults();
    time_passes(&env).await;
    pass(&env).await;
    let (count, _, error) = read_state(&env).await;
    assert_eq!((count, error), (0, None));
    env.fake.reset_counts();
    time_passes(&env).await;
    assert_eq!(pass(&env).await, 0);
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 0);
}

#[tokio::test]
async fn a_failing_team_read_should_back_off_and_keep_the_payload() {
    let env = env().await;
    let id = env.fake.add_team(ACME, "payments", false);
    list(&env).await;
    env.fake
        .inject(Fault::always(FaultKind::ServerError).on(routes::GRAPHQL_DIRECTORY));
    // Two renames arrive together: written from the payload, then read.
    for slug in ["payments-core", "money"] {
        let before = env.fake.team(ACME, id).expect("team");
        env.fake.rename_team(ACME, id, slug);
        let after = env.fake.team(ACME, id).expect("team");
        env.deliver(
            "team",
            fake_dir::team_event(ACME, "acme", "edited", &after, Some(&before.name)),
        )
        .await;
    }
    env.fake.reset_counts();
    pass(&env).await;
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 1);
    assert_eq!(resolve(&directory(&env).await, "money").status(), "team");
    let (failures, wait): (i32, f64) = sqlx::query_as(
        "select failures, extract(epoch from claimed_until - now())::float8 from directory_changes",
    )
    .fetch_one(&env.pool)
    .await
    .expect("the team's read waits");
    assert_eq!(failures, 1);
    assert!((23.0..=36.0).contains(&wait), "{wait} s");
    pass(&env).await;
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 1, "not before");

    env.fake.clear_faults();
    time_passes(&env).await;
    pass(&env).await;
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 2);
    assert_eq!(
        DirectoryDb::new(env.pool.clone())
            .pending_changes()
            .await
            .expect("count"),
        0
    );
}

#[tokio::test]
async fn a_name_with_a_nul_should_be_skipped_with_a_warning_not_fail_the_directory_read() {
    let env = env().await;
    env.fake.add_teams(ACME, 150);
    let bad = env.fake.add_team(ACME, "bad\0team", false);
    env.fake.add_member(ACME, "alice");
    list(&env).await;

    let dir = directory(&env).await;
    let (_, _, error) = read_state(&env).await;
    assert_eq!(error, None, "the read worked");
    assert_eq!(roster_slugs(&dir).len(), 150, "every other team");
    assert!(dir.teams.iter().all(|t| t.team.id != bad));
    assert_eq!(resolve(&dir, "@alice").status(), "member");
    assert_eq!(resolve(&dir, "team-7").status(), "team");

    // A webhook naming a team with a NUL is skipped, saying why; the
    // directory is untouched.
    let team = fake_dir::Team {
        id: bad,
        slug: "bad\0team".into(),
        name: "bad\0team".into(),
        parent: None,
        secret: false,
    };
    let body = fake_dir::team_event(ACME, "acme", "edited", &team, None);
    let intake = support::intake::deliver(&env.pool, &env.queue, "team", &body).await;
    assert_eq!(intake.outcome(), "ignored");
    let reason = intake.ignored.unwrap_or_default();
    assert!(reason.contains("NUL"), "{reason}");
    pass(&env).await;
    assert_eq!(directory(&env).await, dir);

    // A team GitHub renames to a name with a NUL keeps the name it had,
    // through its own read and through the next whole read: skipped, never
    // flagged deleted.
    let seven = dir
        .teams
        .iter()
        .find(|t| t.team.slug == "team-7")
        .map(|t| t.team.id)
        .expect("team-7");
    for _ in 0..2 {
        let now = env.fake.team(ACME, seven).expect("team");
        env.deliver(
            "team",
            fake_dir::team_event(ACME, "acme", "edited", &now, None),
        )
        .await;
    }
    env.fake.rename_team(ACME, seven, "seven\0");
    pass(&env).await;
    list(&env).await;
    let dir = directory(&env).await;
    assert_eq!(resolve(&dir, "team-7").status(), "team");
    assert_eq!(read_state(&env).await.2, None);
}

#[tokio::test]
async fn a_team_payload_should_keep_privacy_and_one_without_it_should_be_secret_until_read() {
    let env = env().await;
    let id = env.fake.add_team(ACME, "platform", false);
    list(&env).await;
    let secret = |dir: &Directory| {
        dir.teams
            .iter()
            .find(|t| t.team.id == id)
            .map(|t| t.team.secret)
    };
    assert_eq!(secret(&directory(&env).await), Some(false));

    // GitHub makes it secret: the payload says so, no read.
    let mut team = env.fake.team(ACME, id).expect("team");
    team.secret = true;
    env.deliver(
        "team",
        fake_dir::team_event(ACME, "acme", "edited", &team, None),
    )
    .await;
    env.fake.reset_counts();
    pass(&env).await;
    assert_eq!(env.fake.total(), 0);
    assert_eq!(secret(&directory(&env).await), Some(true));

    // A payload that does not say is written as secret, then the team is
    // read: GitHub says it is visible again.
    let mut body: serde_json::Value =
        serde_json::from_slice(&fake_dir::team_event(ACME, "acme", "edited", &team, None))
            .expect("payload");
    body["team"]
        .as_object_mut()
        .expect("team")
        .remove("privacy");
    let changes = DirectoryDb::new(env.pool.clone());
    env.deliver("team", body.to_string().into_bytes()).await;
    let before: Option<bool> = sqlx::query_scalar("select secret from directory_changes")
        .fetch_optional(&env.pool)
        .await
        .expect("the recorded change");
    assert_eq!(before, Some(true));
    pass(&env).await;
    assert_eq!(env.fake.count(routes::GRAPHQL_DIRECTORY), 1);
    assert_eq!(secret(&directory(&env).await), Some(false));
    assert_eq!(changes.pending_changes().await.expect("count"), 0);
}

#[tokio::test]
async fn a_page_fetched_before_a_webhook_should_not_overwrite_what_the_webhook_wrote() {
    let env = env().await;
    let renamed = env.fake.add_team(ACME, "payments", false);
    let deleted = env.fake.add_team(ACME, "legacy", false);
    list(&env).await;
    let db = DirectoryDb::new(env.pool.clone());
    let stale = directory(&env).await;

    // A whole read starts; meanwhile one team is renamed and another
    // deleted, their webhooks written first.
    let started = db.read_started().await.expect("start");
    let before = env.fake.team(ACME, renamed).expect("team");
    env.fake.rename_team(ACME, renamed, "money");
    let after = env.fake.team(ACME, renamed).expect("team");
    let gone = env.fake.team(ACME, deleted).expect("team");
    env.fake.delete_team(ACME, deleted);
    env.deliver(
        "team",
        fake_dir::team_event(ACME, "acme", "edited", &after, Some(&before.name)),
    )
    .await;
    env.deliver(
        "team",
        fake_dir::team_event(ACME, "acme", "deleted", &gone, None),
    )
    .await;
    pass(&env).await;

    // The read's page, fetched before them, arrives after.
    let page: Vec<_> = stale.teams.iter().map(|t| t.team.clone()).collect();
    db.put(org_id(ACME), Rows::Teams(&page), started)
        .await
        .expect("page");
    db.finish(org_id(ACME), Part::Teams, started)
        .await
        .expect("finish");
    let dir = directory(&env).await;
    assert_eq!(resolve(&dir, "money").status(), "team");
    assert_eq!(resolve(&dir, "payments").status(), "renamed");
    assert_eq!(resolve(&dir, "legacy").status(), "deleted");
}
