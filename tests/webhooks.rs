//! `POST /webhooks/github` against a real PostgreSQL (a fresh database per
//! test): GitHub's own example payloads, signed, go in; the queue, the
//! registry, the delivery log and the metrics come out (docs/contract.md#webhooks).

use crate::support::registry::{github_repo, on_branch, queue};
use crate::support::server::eventually;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use roster::db::testing::fresh_database;
use roster::intake::{list_deliveries, sign, WebhookLimits, WebhookState, MAX_BODY_BYTES};
use roster::metrics::Metrics;
use roster::registry::ensure_known;
use roster::source::{RepoId, RepoInfo};
use roster::web::json::DeliveryJson;
use roster::web::router::webhook as router;
use secrecy::SecretString;
use serde_json::Value;
use sqlx::PgPool;
use tower::ServiceExt;

const SECRET: &str = "test webhook secret";

struct Harness {
    app: Router,
    pool: PgPool,
    registry: Registry,
}

async fn harness() -> Harness {
    let (pool, _url) = fresh_database().await.expect("a fresh test database");
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::new(&mut registry));
    let queue = queue(&pool);
    let app = router(WebhookState {
        pool: pool.clone(),
        queue,
        secret: SecretString::from(SECRET),
        metrics,
        limits: WebhookLimits::default(),
        free_pushes: None,
        shutdown: roster::shutdown::channel().1,
    });
    Harness {
        app,
        pool,
        registry,
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/github/webhooks")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The event type a fixture was captured for, from its file name.
fn event_of(name: &str) -> &str {
    name.split('.').next().unwrap_or_default()
}

/// A delivery as GitHub sends it; `signature: None` leaves the header out.
fn delivery(
    event: Option<&str>,
    id: &str,
    body: Vec<u8>,
    signature: Option<String>,
) -> Request<Body> {
    let mut request = Request::post("/webhooks/github")
        .header("content-type", "application/json")
        .header("x-github-delivery", id);
    if let Some(event) = event {
        request = request.header("x-github-event", event);
    }
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    request.body(Body::from(body)).expect("a valid request")
}

fn signed(event: &str, id: &str, body: Vec<u8>) -> Request<Body> {
    let signature = sign(SECRET, &body);
    delivery(Some(event), id, body, Some(signature))
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("the router answers");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a readable answer");
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, json)
}

async fn queued(pool: &PgPool) -> Vec<i64> {
    sqlx::query_scalar("select repo_id from queue order by repo_id")
        .fetch_all(pool)
        .await
        .expect("the queue table")
}

async fn listing_requested(pool: &PgPool) -> bool {
    sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("the listing schedule")
}

async fn deliveries(
    pool: &PgPool,
) -> Vec<(String, String, Option<String>, Option<String>, String)> {
    sqlx::query_as("select id, event, action, repo, outcome from deliveries order by id")
        .fetch_all(pool)
        .await
        .expect("the deliveries table")
}

/// The delivery log once it holds every one of `ids` (an accepted
/// delivery's record follows its answer).
async fn logged(
    pool: &PgPool,
    ids: &[&str],
) -> Vec<(String, String, Option<String>, Option<String>, String)> {
    let limit = std::time::Duration::from_secs(10);
    eventually("the deliveries in the log", limit, || async {
        let rows = deliveries(pool).await;
        let all = ids.iter().all(|id| rows.iter().any(|row| row.0 == *id));
        all.then_some(rows)
    })
    .await
}

async fn repository_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from repositories")
        .fetch_one(pool)
        .await
        .expect("the repositories table")
}

fn exposition(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("metrics encode");
    text
}

/// Each fixture: the ids it must enqueue, whether it asks for a listing,
/// and the delivery outcome.
const FIXTURES: &[(&str, &[i64], bool, &str)] = &[
    ("check_suite.requested.json", &[], false, "ignored"),
    (
        "check_suite.requested.with-organization.json",
        &[],
        false,
        "ignored",
    ),
    // The listing reads the new installation's repositories, 100 a request.
    ("installation.created.json", &[], true, "queued"),
    (
        "installation.created.with-requester.json",
        &[],
        true,
        "queued",
    ),
    ("installation.deleted.json", &[1296269], false, "queued"),
    (
        "installation.new_permissions_accepted.json",
        &[],
        true,
        "queued",
    ),
    // Nothing tracked for the installation yet: nothing to reconcile.
    ("installation.suspend.json", &[], false, "ignored"),
    ("installation.unsuspend.json", &[], true, "queued"),
    // A few added repositories are read together, without a listing.
    (
        "installation_repositories.added.json",
        &[186853007],
        false,
        "queued",
    ),
    (
        "installation_repositories.removed.json",
        &[1296269],
        false,
        "queued",
    ),
    ("ping.json", &[], false, "ignored"),
    ("ping.with-app_id.json", &[], false, "ignored"),
    // A pull request into the default branch asks for a check run, not a
    // reconcile.
    ("pull_request.opened.json", &[], false, "queued"),
    ("pull_request.synchronize.json", &[], false, "queued"),
    ("pull_request.reopened.json", &[], false, "queued"),
    (
        "pull_request.edited.base-changed.json",
        &[],
        false,
        "queued",
    ),
    ("check_suite.rerequested.json", &[], false, "queued"),
    // Another App's run is not Roster's to redo.
    ("check_run.rerequested.json", &[], false, "ignored"),
    (
        "check_run.rerequested.roster-run.json",
        &[],
        false,
        "queued",
    ),
    (
        "push.default-branch-created.json",
        &[186853002],
        false,
        "queued",
    ),
    (
        "push.default-branch-no-username-committer.json",
        &[186853002],
        false,
        "queued",
    ),
    ("push.tag-deleted.json", &[], false, "ignored"),
    (
        "push.tag-deleted.with-installation.json",
        &[],
        false,
        "ignored",
    ),
    ("repository.created.json", &[186853261], false, "queued"),
    (
        "repository.created.with-installation.json",
        &[186853261],
        false,
        "queued",
    ),
    ("repository.deleted.json", &[120], false, "queued"),
    ("repository.edited.json", &[], false, "ignored"),
    (
        "repository.edited.with-default_branch-edit.json",
        &[186853261],
        false,
        "queued",
    ),
    ("repository.renamed.json", &[186853261], false, "queued"),
    // The directory's events ask for a re-read of an organisation Roster
    // knows; the fixtures' organisation is not known here.
    ("team.created.json", &[], false, "ignored"),
    ("team.deleted.json", &[], false, "ignored"),
    ("team.edited.json", &[], false, "ignored"),
    ("membership.added.json", &[], false, "ignored"),
    ("membership.removed.json", &[], false, "ignored"),
    (
        "membership.removed.with-deleted-team.json",
        &[],
        false,
        "ignored",
    ),
    (
        "organization.member_added.with-installation.json",
        &[],
        false,
        "ignored",
    ),
    ("organization.renamed.json", &[], false, "ignored"),
    ("repository.transferred.json", &[186853261], false, "queued"),
    (
        "repository.transferred.with-installation.json",
        &[186853261],
        false,
        "queued",
    ),
];

#[tokio::test]
async fn every_fixture_should_enqueue_exactly_what_its_event_implies() {
    let fixtures_on_disk = std::fs::read_dir(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks"),
    )
    .expect("the fixtures folder")
    .count();
    assert_eq!(
        fixtures_on_disk,
        FIXTURES.len(),
        "every fixture has an expectation"
    );

    for &(name, ids, listing, outcome) in FIXTURES {
        let h = harness().await;
        let event = event_of(name);
        let (status, body) = send(&h.app, signed(event, "delivery-1", fixture(name))).await;

        assert_eq!(status, StatusCode::ACCEPTED, "{name}: {body}");
        assert_eq!(body["status"], outcome, "{name}: {body}");
        if outcome == "queued" {
            assert_eq!(body["enqueued"], ids.len(), "{name}: {body}");
            assert_eq!(body["listing_requested"], listing, "{name}: {body}");
        }
        assert_eq!(queued(&h.pool).await, ids, "{name}");
        assert_eq!(listing_requested(&h.pool).await, listing, "{name}");
        let logged = logged(&h.pool, &["delivery-1"]).await;
        assert_eq!(logged.len(), 1, "{name}");
        assert_eq!(logged[0].0, "delivery-1", "{name}");
        assert_eq!(logged[0].1, event, "{name}");
        assert_eq!(logged[0].4, outcome, "{name}");
        let metric = format!(r#"roster_webhooks_total{{event="{event}",outcome="{outcome}"}} 1"#);
        assert!(
            exposition(&h.registry).contains(&metric),
            "{name}: {metric}"
        );
    }
}

#[tokio::test]
async fn default_branch_push_should_show_the_repository_as_pending_at_once() {
    let h = harness().await;
    let body = fixture("push.default-branch-created.json");
    let (status, answer) = send(&h.app, signed("push", "d-push", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(answer["enqueued"], 1, "{answer}");
    assert_eq!(answer["listing_requested"], false, "{answer}");

    let row: (String, String, Option<i64>, Option<String>, String) = sqlx::query_as(
        "select owner, name, installation_id, default_branch, status from repositories where id = $1",
    )
    .bind(186853002_i64)
    .fetch_one(&h.pool)
    .await
    .expect("the repository is known");
    assert_eq!(
        row,
        (
            "Codertocat".to_owned(),
            "Hello-World".to_owned(),
            Some(1),
            Some("master".to_owned()),
            "pending".to_owned()
        )
    );
    let logged = logged(&h.pool, &["d-push"]).await;
    assert_eq!(logged[0].3.as_deref(), Some("Codertocat/Hello-World"));
    let node_id: Option<String> =
        sqlx::query_scalar("select node_id from repositories where id = 186853002")
            .fetch_one(&h.pool)
            .await
            .expect("the repository");
    assert_eq!(node_id.as_deref(), Some("MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI="));
}

#[tokio::test]
async fn installation_repositories_added_should_not_overwrite_what_a_listing_stored() {
    let h = harness().await;
    let listed = on_branch(github_repo("Codertocat", "Space", 957387), "trunk");
    ensure_known(&h.pool, &[(RepoId(186853007), listed)])
        .await
        .expect("seed the registry");

    let body = fixture("installation_repositories.added.json");
    let (status, _) = send(&h.app, signed("installation_repositories", "d-added", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let branch: Option<String> =
        sqlx::query_scalar("select default_branch from repositories where id = 186853007")
            .fetch_one(&h.pool)
            .await
            .expect("the repository");
    assert_eq!(branch.as_deref(), Some("trunk"));
    let node_id: Option<String> =
        sqlx::query_scalar("select node_id from repositories where id = 186853007")
            .fetch_one(&h.pool)
            .await
            .expect("the repository");
    assert_eq!(
        node_id.as_deref(),
        Some("MDEwOlJlcG9zaXRvcnkxODY4NTMwMDc="),
        "its node id is learnt"
    );
    assert_eq!(
        queued(&h.pool).await,
        vec![186853007],
        "read by its node id"
    );
    assert!(!listing_requested(&h.pool).await, "one added repository");
}

#[tokio::test]
async fn installation_created_should_show_its_repositories_as_pending_and_enqueue_none() {
    let h = harness().await;
    let body = fixture("installation.created.json");
    let (status, _) = send(&h.app, signed("installation", "d-installed", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let row: (String, String, Option<i64>, String, Option<String>) = sqlx::query_as(
        "select owner, name, installation_id, status, node_id from repositories where id = $1",
    )
    .bind(186853002_i64)
    .fetch_one(&h.pool)
    .await
    .expect("the repository is known");
    assert_eq!(
        row,
        (
            "Codertocat".to_owned(),
            "Hello-World".to_owned(),
            Some(957387),
            "pending".to_owned(),
            Some("MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=".to_owned())
        )
    );
    assert!(queued(&h.pool).await.is_empty());
    assert!(listing_requested(&h.pool).await);
}

fn push_with(change: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&fixture("push.default-branch-created.json"))
        .expect("the fixture is JSON");
    change(&mut value);
    serde_json::to_vec(&value).expect("JSON serializes")
}

#[tokio::test]
async fn pushes_that_cannot_change_the_project_file_should_enqueue_nothing() {
    let h = harness().await;
    let cases = [
        (
            "other-branch",
            push_with(|v| v["ref"] = "refs/heads/feature".into()),
        ),
        ("tag", push_with(|v| v["ref"] = "refs/tags/v1.0.0".into())),
        ("deleted-default", push_with(|v| v["deleted"] = true.into())),
        ("tag-deleted", fixture("push.tag-deleted.json")),
    ];
    let ids: Vec<&str> = cases.iter().map(|(id, _)| *id).collect();
    for (id, body) in cases {
        let (status, answer) = send(&h.app, signed("push", id, body)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{id}");
        assert_eq!(answer["status"], "ignored", "{id}: {answer}");
    }
    assert!(queued(&h.pool).await.is_empty());
    assert_eq!(repository_count(&h.pool).await, 0);
    let outcomes: Vec<String> = logged(&h.pool, &ids)
        .await
        .into_iter()
        .map(|d| d.4)
        .collect();
    assert_eq!(outcomes, vec!["ignored"; 4]);
}

#[tokio::test]
async fn wrong_or_missing_signature_should_answer_401_and_touch_nothing() {
    let h = harness().await;
    let body = fixture("push.default-branch-created.json");
    let cases = [
        ("missing", None),
        ("wrong-secret", Some(sign("another secret", &body))),
        ("malformed", Some("sha256=not-hex".to_owned())),
        (
            "no-prefix",
            Some(sign(SECRET, &body).replace("sha256=", "")),
        ),
        ("other-body", Some(sign(SECRET, b"{}"))),
    ];
    for (id, signature) in cases {
        let request = delivery(Some("push"), id, body.clone(), signature);
        let (status, answer) = send(&h.app, request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{id}");
        assert!(answer["error"].is_string(), "{id}: {answer}");
    }
    assert!(queued(&h.pool).await.is_empty());
    assert!(deliveries(&h.pool).await.is_empty());
    assert_eq!(repository_count(&h.pool).await, 0);
    assert!(exposition(&h.registry)
        .contains(r#"roster_webhooks_total{event="other",outcome="unauthorized"} 5"#));
}

#[tokio::test]
async fn signature_should_be_checked_before_the_body_is_parsed() {
    let h = harness().await;
    let request = delivery(Some("push"), "junk", b"not json".to_vec(), None);
    let (status, _) = send(&h.app, request).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn body_over_25_mib_should_answer_413() {
    let h = harness().await;
    let body = vec![b' '; MAX_BODY_BYTES + 1];
    let (status, answer) = send(&h.app, signed("push", "too-big", body)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(answer["error"].is_string(), "{answer}");
    assert!(queued(&h.pool).await.is_empty());
    assert!(deliveries(&h.pool).await.is_empty());
}

#[tokio::test]
async fn body_of_exactly_25_mib_should_be_accepted() {
    let h = harness().await;
    let mut body = fixture("ping.json");
    body.resize(MAX_BODY_BYTES, b' ');
    let (status, _) = send(&h.app, signed("ping", "just-fits", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn body_that_is_not_json_should_answer_400_and_be_logged_as_rejected() {
    let h = harness().await;
    let (status, answer) = send(&h.app, signed("push", "not-json", b"{not json".to_vec())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        answer["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not JSON"),
        "{answer}"
    );
    assert!(queued(&h.pool).await.is_empty());
    let logged = deliveries(&h.pool).await;
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].4, "rejected");
}

#[tokio::test]
async fn payload_missing_a_needed_field_should_answer_400_with_its_name() {
    let h = harness().await;
    let body = br#"{"ref": "refs/heads/main", "deleted": false}"#.to_vec();
    let (status, answer) = send(&h.app, signed("push", "no-repo", body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = answer["error"].as_str().unwrap_or_default();
    assert!(message.contains("repository"), "{answer}");
    assert!(queued(&h.pool).await.is_empty());
}

#[tokio::test]
async fn missing_event_header_should_answer_400() {
    let h = harness().await;
    let body = fixture("push.default-branch-created.json");
    let signature = sign(SECRET, &body);
    let (status, answer) = send(&h.app, delivery(None, "no-event", body, Some(signature))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(answer["error"]
        .as_str()
        .unwrap_or_default()
        .contains("X-GitHub-Event"));
    assert!(queued(&h.pool).await.is_empty());
}

#[tokio::test]
async fn ping_should_answer_202() {
    let h = harness().await;
    let (status, answer) = send(&h.app, signed("ping", "ping-1", fixture("ping.json"))).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(answer["status"], "ignored");
}

#[tokio::test]
async fn redelivered_id_should_keep_one_row_and_enqueue_again_harmlessly() {
    let h = harness().await;
    let body = fixture("push.default-branch-created.json");
    for _ in 0..2 {
        let (status, _) = send(&h.app, signed("push", "same-id", body.clone())).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let logged = logged(&h.pool, &["same-id"]).await;
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].4, "queued");
    assert_eq!(queued(&h.pool).await, vec![186853002]);
}

fn tracked_repo(name: &str, installation_id: i64) -> RepoInfo {
    github_repo("octocat", name, installation_id)
}

#[tokio::test]
async fn installation_deleted_should_enqueue_its_tracked_repositories_and_delete_nothing() {
    let h = harness().await;
    ensure_known(
        &h.pool,
        &[
            (RepoId(11), tracked_repo("one", 2)),
            (RepoId(12), tracked_repo("two", 2)),
            (RepoId(99), tracked_repo("elsewhere", 3)),
        ],
    )
    .await
    .expect("seed the registry");

    let body = fixture("installation.deleted.json");
    let (status, answer) = send(&h.app, signed("installation", "uninstalled", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(answer["status"], "queued");

    // The payload's repository and the installation's tracked ones; not
    // another installation's.
    assert_eq!(queued(&h.pool).await, vec![11, 12, 1296269]);
    assert_eq!(repository_count(&h.pool).await, 3);
    let statuses: Vec<String> = sqlx::query_scalar("select status from repositories order by id")
        .fetch_all(&h.pool)
        .await
        .expect("statuses");
    assert_eq!(statuses, vec!["pending"; 3]);
}

#[tokio::test]
async fn installation_suspend_should_enqueue_its_tracked_repositories() {
    let h = harness().await;
    ensure_known(&h.pool, &[(RepoId(21), tracked_repo("kept", 16598467))])
        .await
        .expect("seed the registry");
    let body = fixture("installation.suspend.json");
    let (status, answer) = send(&h.app, signed("installation", "suspended", body)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert_eq!(queued(&h.pool).await, vec![21]);
    assert!(!listing_requested(&h.pool).await);
    assert_eq!(repository_count(&h.pool).await, 1);
}

#[tokio::test]
async fn database_down_should_answer_503_never_2xx() {
    let h = harness().await;
    h.pool.close().await;
    let body = fixture("push.default-branch-created.json");
    let (status, answer) = send(&h.app, signed("push", "db-down", body)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer["error"].is_string(), "{answer}");
    assert!(exposition(&h.registry)
        .contains(r#"roster_webhooks_total{event="push",outcome="error"} 1"#));
}

#[tokio::test]
async fn deliveries_should_list_newest_first_with_cursor_and_repo_filter() {
    let h = harness().await;
    let pushes = ["a", "b", "c"];
    for id in pushes {
        let body = fixture("push.default-branch-created.json");
        let (status, _) = send(&h.app, signed("push", id, body)).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let (status, _) = send(
        &h.app,
        signed("ping", "p", fixture("ping.with-app_id.json")),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(logged(&h.pool, &["a", "b", "c", "p"]).await.len(), 4);
    // Distinct, known times, so the order is the test's and not the clock's.
    sqlx::query(
        "update deliveries set at = timestamptz '2024-01-01' + case id
             when 'a' then interval '1 minute' when 'b' then interval '2 minutes'
             when 'c' then interval '3 minutes' else interval '4 minutes' end",
    )
    .execute(&h.pool)
    .await
    .expect("set times");

    let first = list_deliveries(&h.pool, 2, None, None)
        .await
        .expect("first page");
    let ids: Vec<&str> = first.items.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, vec!["p", "c"]);
    let cursor = first.next_cursor.expect("a second page");
    let second = list_deliveries(&h.pool, 2, Some(&cursor), None)
        .await
        .expect("second page");
    let ids: Vec<&str> = second.items.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, vec!["b", "a"]);
    assert_eq!(second.next_cursor, None);

    let only = list_deliveries(&h.pool, 100, None, Some("Codertocat/Hello-World"))
        .await
        .expect("filtered");
    assert_eq!(only.items.len(), 3);
    let shown = DeliveryJson::from(only.items[0].clone());
    let json = serde_json::to_value(&shown).expect("serializes");
    for field in [
        "id",
        "event",
        "action",
        "repo",
        "outcome",
        "at",
        "redelivery_requested",
    ] {
        assert!(json.get(field).is_some(), "{field} in {json}");
    }
    assert_eq!(json["repo"], "Codertocat/Hello-World");
    assert_eq!(json["redelivery_requested"], false);

    assert!(list_deliveries(&h.pool, 10, Some("garbage"), None)
        .await
        .is_err());
}
