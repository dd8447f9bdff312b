//! What the organisation keeps private stays private (docs/contract.md#bounds, docs/contract.md#what-a-reader-without-credentials-sees): an
//! organisation with a private repository, a secret team renamed once, a
//! member and a visible team; every read route `src/web/router.rs` declares
//! is walked without credentials (the list is read from that file, so a new
//! route is walked without anyone adding it here), and so is every check
//! run posted on the public repository. No answer names the secret team by
//! either slug or the member, and no check names the private repository.
//! With the API token the same routes do show them, so the walk proves
//! something is hidden, not that nothing was there.

use crate::checks::{env, Env, ACME, FILE};
use crate::support;
use crate::support::fake_github::directory as fake_dir;
use crate::support::pull_requests;

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use roster::controller::Lister;
use roster::directory::OwnersMode;
use roster::registry::changes::ChangeWaker;
use roster::registry::owner_follow::follow_changes;
use roster::web::api_changes::ChangesState;
use roster::web::long_polls::LongPolls;
use serde_json::Value;

const TOKEN: &str = "walk-t0ken";

/// Names no reader without credentials may see on a route.
const PRIVATE: [&str; 3] = ["falcon-secret", "falcon-hidden-core", "hidden-person"];

/// Names no check on the public repository may show: its own file names
/// the secret team's old slug and the member, so those are public there.
const PRIVATE_IN_CHECKS: [&str; 2] = ["secret-merger", "falcon-hidden-core"];

const OSS: &str = "projects:
  - name: oss
    owner: platform
  - name: falcon-oss
    owner: falcon-secret
    system: falcon
    depends_on: [oss]
  - name: ghost
    owner: '@hidden-person'
    system: falcon
  - name: nobody
    owner: '@nobody-here'
";

/// Every `GET` route of `src/web/router.rs`, as written there.
fn read_routes() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web/router.rs");
    let text = std::fs::read_to_string(path).expect("read the router");
    let mut routes = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(".route(") {
        rest = &rest[at + ".route(".len()..];
        let call = rest.trim_start();
        let Some(call) = call.strip_prefix('"') else {
            continue; // a constant (the webhook's path): a POST route
        };
        let Some((route, after)) = call.split_once('"') else {
            continue;
        };
        let handler = after.trim_start_matches([',', ' ', '\n']);
        if handler.starts_with("get(") {
            routes.push(route.to_owned());
        }
    }
    routes
}

/// The addresses to read for `route`: each placeholder filled with every
/// repository or entry of the organisation, some with their queries.
fn addresses(route: &str) -> Vec<String> {
    let repos = ["acme/oss", "acme/secret-merger"];
    let entries = ["oss", "falcon-oss", "ghost", "nobody", "project-falcon"];
    let mut out = Vec::new();
    if route.contains("{owner}/{name}") {
        for repo in repos {
            out.push(route.replace("{owner}/{name}", repo));
        }
    } else if route.contains("{name}") {
        for entry in entries {
            out.push(route.replace("{name}", entry));
        }
    } else {
        out.push(route.to_owned());
    }
    assert!(
        out.iter().all(|a| !a.contains('{')),
        "a placeholder the walk does not fill: {route}"
    );
    let queries: &[&str] = match route {
        "/api/v1/owners" => &["?status=unknown", "?status=renamed", "?status=deleted"],
        "/api/v1/changes" => &["?after=0&limit=1000"],
        // (The page repeats its own filter in its form: only the API's
        // answer is read for it.)
        "/api/v1/projects" => &["?owner=falcon-secret", "?owner=%40hidden-person"],
        "/api/v1/graph" => &["?root=falcon-oss&depth=3", "?root=ghost&depth=1"],
        _ => &[],
    };
    let extra: Vec<String> = queries.iter().map(|q| format!("{route}{q}")).collect();
    out.extend(extra);
    out
}

fn app(env: &Env, token: Option<&'static str>) -> Router {
    let options = support::router::Options {
        api_token: token,
        github_web_url: Some("https://github.com"),
    };
    let main = support::router::app_on(&env.pool, &env.queue, options, |_, _| {}, |_| {});
    let feed = roster::web::router::changes(ChangesState {
        pool: env.pool.clone(),
        waker: ChangeWaker::start(env.pool.clone()),
        stop: roster::shutdown::channel().1,
        long_polls: LongPolls::default(),
        access: None,
    });
    main.merge(feed)
}

async fn read(app: &Router, uri: &str, token: Option<&str>) -> support::http::Answer {
    let mut request = Request::get(uri);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    support::router::send(app, request.body(Body::empty()).expect("request")).await
}

/// The organisation: private `secret-merger` owning `project-falcon`,
/// public `oss` naming the secret team, the member and nobody; the secret
/// team then renamed, its entries followed; a pull request and a push on
/// `oss` checked.
async fn organisation() -> (Env, i64) {
    let env = env().await;
    let secret = env.fake.add_team(ACME, "falcon-secret", true);
    env.fake.add_team(ACME, "platform", false);
    env.fake.add_member(ACME, "hidden-person");
    env.source
        .lister()
        .list()
        .await
        .expect("a listing reads the directory");
    let merger = env.fake.add_repo_with_file(
        ACME,
        "secret-merger",
        FILE,
        "name: project-falcon\nowner: falcon-secret\n",
    );
    env.reconcile(merger).await;
    let oss = env.fake.add_repo_with_file(ACME, "oss", FILE, OSS);
    assert_eq!(env.reconcile(oss).await, "synced");

    env.fake.rename_team(ACME, secret, "falcon-hidden-core");
    let now = env.fake.team(ACME, secret).expect("the team");
    let body = fake_dir::team_event(ACME, "acme", "edited", &now, Some("falcon-secret"));
    env.deliver("team", body).await;
    env.source.directory().pass().await.expect("re-read");
    let moved = follow_changes(&env.pool, OwnersMode::Warn)
        .await
        .expect("follow");
    assert_eq!(moved, 2, "both entries of the secret team follow it");

    // A pull request on the public repository, and a push taking the
    // private repository's name.
    let taking = format!("{OSS}  - name: project-falcon\n    owner: platform\n");
    let sha = env.fake.pr_commit(oss, FILE, taking.as_bytes());
    let pr = pull_requests::Pr {
        repo: oss,
        installation: ACME,
        owner: "acme",
        name: "oss",
        number: 1,
        sha: &sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr);
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.fake.push_file(oss, FILE, taking.as_bytes());
    assert_eq!(env.reconcile(oss).await, "conflict");
    env.settle().await;
    (env, oss)
}

fn leaked<'a>(text: &str, names: &[&'a str]) -> Vec<&'a str> {
    let text = text.to_lowercase();
    names.iter().copied().filter(|n| text.contains(n)).collect()
}

#[tokio::test]
async fn no_read_route_and_no_check_should_show_a_private_name_without_credentials() {
    let (env, oss) = organisation().await;
    let routes = read_routes();
    assert!(routes.len() >= 20, "the router's read routes: {routes:?}");
    assert!(routes.iter().any(|r| r == "/api/v1/changes"), "{routes:?}");
    let public = app(&env, None);
    let mut walked = 0;
    let mut leaks = Vec::new();
    for route in &routes {
        for uri in addresses(route) {
            let answer = read(&public, &uri, None).await;
            // Setup mode's routes are served only before an App exists.
            if !uri.starts_with("/setup") {
                // (`/signin` answers 403 where no token is configured.)
                let read = answer.status == 200 || uri == "/signin";
                assert!(read, "{uri}: {} {}", answer.status, answer.body);
            }
            walked += 1;
            let found = leaked(&answer.body, &PRIVATE);
            if !found.is_empty() {
                leaks.push(format!("{uri}: {found:?}"));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "private names without credentials:\n{}",
        leaks.join("\n")
    );
    println!("walked {walked} addresses of {} read routes", routes.len());

    let runs = env.fake.check_runs(oss);
    assert!(
        runs.len() >= 2,
        "the pull request's and the push's: {runs:?}"
    );
    for run in runs {
        let text = format!("{run:?}");
        let found = leaked(&text, &PRIVATE_IN_CHECKS);
        assert!(found.is_empty(), "{found:?} in the check {text}");
    }

    // With the API token the same routes name them: there was something
    // to hide.
    let operator = app(&env, Some(TOKEN));
    let entry = read(&operator, "/api/v1/projects/falcon-oss", Some(TOKEN))
        .await
        .json();
    assert_eq!(entry["owner_status"], "renamed");
    assert_eq!(entry["owner_slug"], "falcon-hidden-core");
    let owners = read(&operator, "/api/v1/owners", Some(TOKEN)).await.body;
    assert!(owners.contains("hidden-person"), "{owners}");
}

#[tokio::test]
async fn a_member_and_nobody_should_read_alike_without_credentials() {
    let (env, _) = organisation().await;
    let public = app(&env, None);
    let owner = |v: &Value| {
        (
            v["owner"].clone(),
            v["owner_status"].clone(),
            v["owner_slug"].clone(),
            v["owner_team_id"].clone(),
        )
    };
    let member = read(&public, "/api/v1/projects/ghost", None).await.json();
    let nobody = read(&public, "/api/v1/projects/nobody", None).await.json();
    let secret = read(&public, "/api/v1/projects/falcon-oss", None)
        .await
        .json();
    assert_eq!(owner(&member), owner(&nobody));
    assert_eq!(owner(&secret), owner(&nobody));
    assert_eq!(member["owner_status"], "hidden");
    // A visible team is shown as it is.
    let open = read(&public, "/api/v1/projects/oss", None).await.json();
    assert_eq!(open["owner_status"], "team");
    assert_eq!(open["owner_slug"], "platform");
    // The feed tells nothing more, nor the dangling owners.
    let feed = read(&public, "/api/v1/changes?after=0", None).await.body;
    assert!(!feed.contains("\"member\""), "{feed}");
    let unknown = read(&public, "/api/v1/owners?status=unknown", None)
        .await
        .json();
    assert_eq!(unknown["items"], serde_json::json!([]));
    // Relations show the entries, never their hidden owners.
    let graph = read(&public, "/api/v1/graph?root=oss&depth=1", None)
        .await
        .json();
    let falcon = graph["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|n| n["name"] == "falcon-oss")
        .cloned();
    let falcon = falcon.expect("falcon-oss depends on oss");
    assert_eq!(falcon["owner"], Value::Null);
    assert_eq!(falcon["status"], "resolved");
    let systems = read(&public, "/api/v1/systems", None).await.json();
    assert_eq!(systems["items"][0]["name"], "falcon");
    assert_eq!(systems["items"][0]["project_count"], 2);
    assert_eq!(systems["items"][0]["owners"], serde_json::json!([]));
    let operator = app(&env, Some(TOKEN));
    let seen = read(&operator, "/api/v1/systems", Some(TOKEN)).await.json();
    assert_eq!(
        seen["items"][0]["owners"].as_array().map(Vec::len),
        Some(2),
        "with the token: {seen}"
    );
    // Filtering by an owner's text finds no hidden owner.
    for owner in ["%40hidden-person", "%40nobody-here", "falcon-secret"] {
        let found = read(&public, &format!("/api/v1/projects?owner={owner}"), None)
            .await
            .json();
        assert_eq!(found["items"], serde_json::json!([]), "{owner}");
    }
}

/// Follows the feed from the start a change at a time, as a consumer
/// storing `next_cursor` does, until an answer is empty.
async fn follow_feed(app: &Router) -> (Vec<Value>, i64) {
    let (mut items, mut cursor) = (Vec::new(), 0_i64);
    for _ in 0..1_000 {
        let page = read(
            app,
            &format!("/api/v1/changes?after={cursor}&limit=1"),
            None,
        )
        .await
        .json();
        let next = page["next_cursor"].as_i64().expect("a cursor");
        let got = page["items"].as_array().cloned().unwrap_or_default();
        if got.is_empty() {
            return (items, next);
        }
        assert!(next > cursor, "the cursor moves on: {cursor} then {next}");
        cursor = next;
        items.extend(got);
    }
    panic!("the feed never ended");
}

/// Pages an entry's history newest first, a change at a time, to its end.
async fn page_history(app: &Router, name: &str, token: Option<&str>) -> (Vec<Value>, usize) {
    let (mut items, mut pages) = (Vec::new(), 0);
    let mut uri = format!("/api/v1/projects/{name}/history?limit=1");
    loop {
        pages += 1;
        assert!(pages < 1_000, "the history never ended");
        let page = read(app, &uri, token).await.json();
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(cursor) => {
                uri = format!("/api/v1/projects/{name}/history?limit=1&cursor={cursor}")
            }
            None => return (items, pages),
        }
    }
}

fn causes(items: &[Value]) -> Vec<&str> {
    items.iter().filter_map(|c| c["cause"].as_str()).collect()
}

#[tokio::test]
async fn a_secret_teams_rename_should_not_show_in_the_feed_or_history_without_credentials() {
    let (env, _) = organisation().await;
    let last: i64 = sqlx::query_scalar("select max(seq) from changes")
        .fetch_one(&env.pool)
        .await
        .expect("the log's last seq");
    let public = app(&env, None);

    let (feed, end) = follow_feed(&public).await;
    assert!(!feed.is_empty(), "the other changes show");
    assert!(
        !causes(&feed).contains(&"team_renamed"),
        "{:?}",
        causes(&feed)
    );
    assert_eq!(end, last, "the cursor goes past the left-out changes");
    // Asked from just before the rename, the feed goes on past it.
    let renamed: Vec<i64> =
        sqlx::query_scalar("select seq from changes where cause = 'team_renamed' order by seq")
            .fetch_all(&env.pool)
            .await
            .expect("the rename's changes");
    assert_eq!(
        renamed.len(),
        2,
        "both entries of the secret team followed it"
    );
    let from = renamed[0] - 1;
    let page = read(
        &public,
        &format!("/api/v1/changes?after={from}&limit=1"),
        None,
    )
    .await
    .json();
    let next = page["next_cursor"].as_i64().expect("a cursor");
    assert!(next > renamed[0], "{page}");
    assert!(!page.to_string().contains("team_renamed"), "{page}");

    // History: a page holding only the rename reads empty, and its cursor
    // still reaches the entry's creation.
    let (history, pages) = page_history(&public, "falcon-oss", None).await;
    assert!(
        !causes(&history).contains(&"team_renamed"),
        "{:?}",
        causes(&history)
    );
    assert_eq!(
        history.last().map(|c| c["kind"].clone()),
        Some(Value::from("created")),
        "{history:?}"
    );
    let (all, _) = page_history(&app(&env, Some(TOKEN)), "falcon-oss", Some(TOKEN)).await;
    assert!(causes(&all).contains(&"team_renamed"), "{:?}", causes(&all));
    assert_eq!(all.len(), history.len() + 1, "only the rename left out");
    assert!(
        pages > history.len(),
        "a page read empty and paging went on"
    );

    // The pages: neither the entry's history nor the stream shows it.
    for uri in [
        "/projects/falcon-oss/history",
        "/changes",
        "/changes?cause=team_renamed",
    ] {
        let body = read(&public, uri, None).await.body;
        assert!(!body.contains("<code>team_renamed</code>"), "{uri}: {body}");
    }
    let body = read(&public, "/projects/falcon-oss/history", None)
        .await
        .body;
    assert!(body.contains("<code>"), "the other changes show: {body}");
}

#[tokio::test]
async fn the_changes_page_filtered_by_a_hidden_owner_should_find_nothing_without_credentials() {
    let (env, _) = organisation().await;
    let public = app(&env, None);
    // The control: a visible team's changes are found by its slug.
    let body = read(&public, "/changes?owner=platform", None).await.body;
    assert!(body.contains("/projects/oss"), "{body}");
    // A secret team (old slug or new), a member and nobody: no change is
    // found, so the filter cannot confirm that the text names someone.
    for owner in [
        "falcon-secret",
        "falcon-hidden-core",
        "%40hidden-person",
        "%40nobody-here",
    ] {
        let body = read(&public, &format!("/changes?owner={owner}"), None)
            .await
            .body;
        for name in [
            "/projects/falcon-oss",
            "/projects/ghost",
            "/projects/nobody",
        ] {
            assert!(!body.contains(name), "{owner} found {name}: {body}");
        }
    }
}
