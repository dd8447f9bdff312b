//! `POST /webhooks/github` (docs/contract.md#webhooks, docs/contract.md#bounds). The [`VerifiedDelivery`]
//! extractor takes the delivery through its checks (the headers, a turn to
//! read the body, signature, headers and JSON) and answers refusals; the
//! handler persists everything the event implies, then answers.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::sync::oneshot;

use super::admission::Admission;
use super::group::{GroupCommit, GroupError, GroupLimits, Job};
use super::state::{Route, WebhookState};
use super::verified::{self, VerifiedDelivery};

/// Where GitHub sends deliveries.
pub const PATH: &str = "/webhooks/github";

/// GitHub gives up after 10 s; answering 503 before then keeps its log
/// truthful (a failure a redelivery recovers) even when the database hangs.
pub const PERSIST_TIMEOUT: Duration = Duration::from_secs(8);

/// The route's state, built once from `state` (its bounds are
/// `state.limits`: tests shorten the wait there), and its [`Admission`], so
/// that a test can see when every slot is taken instead of guessing. The
/// path is declared with every other route, in `web::router`.
pub fn prepare(state: WebhookState) -> (Arc<Route>, Arc<Admission>) {
    let admission = Arc::new(Admission::new(state.limits));
    let group = GroupCommit::new(
        state.pool.clone(),
        state.queue.clone(),
        GroupLimits::default(),
        state.shutdown.clone(),
    )
    .with_free_pushes(state.free_pushes.clone());
    let route = Route {
        state,
        admission: admission.clone(),
        group,
    };
    (Arc::new(route), admission)
}

/// Hands a verified delivery to a writer of the group commit
/// ([`GroupCommit`]), which enqueues what the event implies in one
/// transaction shared with the deliveries that arrived at the same time,
/// and answers its verdict: 202 only once that has committed (the
/// delivery's record in the log follows); 503 when it could not be, or not
/// within [`PERSIST_TIMEOUT`] (nothing enqueued, nothing recorded: GitHub
/// shows the delivery failed). Workers are woken after the commit, so they
/// find the rows.
///
/// The answer carries counts, never the ids: a payload may name hundreds
/// of thousands of repositories.
pub async fn receive(
    State(route): State<Arc<Route>>,
    VerifiedDelivery(accepted): VerifiedDelivery,
) -> Response {
    let (delivery_id, event) = (accepted.delivery_id.clone(), accepted.event.clone());
    let (action, repo) = (accepted.parsed.action.clone(), accepted.parsed.repo.clone());
    let (done, verdict) = oneshot::channel();
    let job = Job { accepted, done };
    let submitted = tokio::time::timeout(PERSIST_TIMEOUT, async {
        let sent = route.group.jobs().send(job).await;
        sent.map_err(|_| GroupError::Stopped)?;
        verdict.await.unwrap_or(Err(GroupError::Stopped))
    })
    .await;
    let intake = match submitted {
        Ok(Ok(intake)) => intake,
        failed => {
            let error = match failed {
                Ok(Err(e)) => e.to_string(),
                _ => format!("database did not answer within {PERSIST_TIMEOUT:?}"),
            };
            tracing::error!(delivery = %delivery_id, event, error,
                "webhook not persisted; GitHub will show it failed");
            route.state.metrics.webhook(&event, "error");
            return verified::error_answer(
                StatusCode::SERVICE_UNAVAILABLE,
                "could not persist the delivery; redeliver it later",
            );
        }
    };
    let outcome = intake.outcome();
    route.state.metrics.webhook(&event, outcome);
    // Every delivery is in the delivery log (and counted): the log line is
    // for debugging, at a cost the intake's hot path should not pay.
    tracing::debug!(delivery = %delivery_id, event, action = ?action,
        repo = ?repo, outcome, enqueued = intake.enqueued, "webhook");
    let body = Answer {
        status: outcome,
        event: &event,
        reason: intake.ignored.as_deref(),
        enqueued: intake.ignored.is_none().then_some(intake.enqueued),
        listing_requested: intake.ignored.is_none().then_some(intake.listing_requested),
    };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

/// The 202's body: the outcome, and the reason it was ignored or what was
/// asked for (written straight from these fields: no JSON tree per answer).
#[derive(serde::Serialize)]
struct Answer<'a> {
    status: &'static str,
    event: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enqueued: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    listing_requested: Option<bool>,
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use axum::Router;
    use prometheus_client::metrics::counter::Counter;
    use secrecy::SecretString;
    use sqlx::PgPool;
    use tower::ServiceExt;

    use super::*;
    use crate::controller::WorkQueue;
    use crate::db::queue::PgQueue;
    use crate::intake::admission::WebhookLimits;
    use crate::intake::signature::{sign, SIGNATURE_HEADER};
    use crate::metrics::Metrics;

    const SECRET: &str = "route test secret";

    struct Harness {
        app: Router,
        pool: PgPool,
        queue: Arc<PgQueue>,
        adds: Counter,
    }

    impl Harness {
        /// Repositories the registry recorded, and queued ids: what an
        /// accepted delivery commits before its answer.
        async fn written(&self) -> (i64, u64) {
            let written = crate::registry::testing::repositories_written(&self.pool)
                .await
                .expect("the registry's count");
            let queued = self.queue.depth().await.expect("the queue's depth");
            (written.rows, queued)
        }
    }

    async fn harness() -> Harness {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let adds = Counter::default();
        let queue = crate::testing::queue_with(&pool, crate::testing::LEASE)
            .with_adds_counter(adds.clone());
        let metrics = Arc::new(Metrics::new(
            &mut prometheus_client::registry::Registry::default(),
        ));
        let queue = Arc::new(queue);
        let app = crate::web::router::webhook(WebhookState {
            pool: pool.clone(),
            queue: queue.clone(),
            secret: SecretString::from(SECRET),
            metrics,
            limits: WebhookLimits::default(),
            free_pushes: None,
            shutdown: crate::shutdown::channel().1,
        });
        Harness {
            app,
            pool,
            queue,
            adds,
        }
    }

    async fn push(app: &Router, id: &str) -> StatusCode {
        push_to(app, id, None).await
    }

    /// A push delivery `id`, to the fixture's repository or to repository
    /// number `repo` (its id and name made from the number).
    async fn push_to(app: &Router, id: &str, repo: Option<u32>) -> StatusCode {
        let push = crate::testing::webhook_fixture("push.default-branch-created.json");
        let mut body = String::from_utf8(push).expect("the push fixture is UTF-8");
        if let Some(n) = repo {
            body = body
                .replace("186853002", &(1_000 + n).to_string())
                .replace("Hello-World", &format!("repo-{n}"));
        }
        let body = body.into_bytes();
        let request = Request::post(PATH)
            .header("content-type", "application/json")
            .header("x-github-delivery", id)
            .header("x-github-event", "push")
            .header(SIGNATURE_HEADER, sign(SECRET, &body))
            .body(Body::from(body))
            .expect("a valid request");
        app.clone()
            .oneshot(request)
            .await
            .expect("the router answers")
            .status()
    }

    async fn count(pool: &PgPool, table: &str) -> i64 {
        sqlx::query_scalar(&format!("select count(*) from {table}"))
            .fetch_one(pool)
            .await
            .expect("a count")
    }

    /// The delivery log's row count once it holds `ids` (or after 10 s):
    /// rows are written just after their deliveries' answers.
    async fn logged(pool: &PgPool, ids: &[&str]) -> i64 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let found: i64 =
                sqlx::query_scalar("select count(*) from deliveries where id = any($1)")
                    .bind(ids)
                    .fetch_one(pool)
                    .await
                    .expect("a count");
            if found == ids.len() as i64 || tokio::time::Instant::now() > deadline {
                return count(pool, "deliveries").await;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn accepted_delivery_should_commit_its_writes_and_count_the_enqueue() {
        let h = harness().await;
        assert_eq!(push(&h.app, "ok-1").await, StatusCode::ACCEPTED);
        // Committed before the answer.
        assert_eq!(h.written().await, (1, 1));
        assert_eq!(h.adds.get(), 1);
        assert_eq!(logged(&h.pool, &["ok-1"]).await, 1);
        let outcome: String = sqlx::query_scalar("select outcome from deliveries")
            .fetch_one(&h.pool)
            .await
            .expect("the row");
        assert_eq!(outcome, "queued");
    }

    async fn flood(app: &Router, ids: &[String]) -> Vec<StatusCode> {
        futures_util::future::join_all(ids.iter().map(|id| push(app, id))).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deliveries_arriving_together_should_commit_in_shared_transactions() {
        let h = harness().await;
        let ids: Vec<String> = (0..64).map(|n| format!("together-{n}")).collect();
        let answers = futures_util::future::join_all(
            (0..64u32).map(|n| push_to(&h.app, &ids[n as usize], Some(n))),
        )
        .await;
        assert!(
            answers.iter().all(|s| *s == StatusCode::ACCEPTED),
            "{answers:?}"
        );
        assert_eq!(h.written().await, (64, 64));
        let commits = crate::registry::testing::repositories_written(&h.pool)
            .await
            .expect("the registry's count")
            .commits;
        assert!(commits < 64, "every delivery had a commit of its own");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_redelivered_id_should_be_logged_once_with_its_last_outcome() {
        let h = harness().await;
        let mut ids: Vec<String> = (0..64).map(|n| format!("again-{n}")).collect();
        ids.push("again-0".to_owned());
        let answers = flood(&h.app, &ids).await;
        assert!(
            answers.iter().all(|s| *s == StatusCode::ACCEPTED),
            "{answers:?}"
        );
        let all: Vec<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(logged(&h.pool, &all).await, 64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_group_should_answer_503_to_each_delivery_and_write_nothing() {
        let h = harness().await;
        sqlx::query("alter table queue rename to queue_gone")
            .execute(&h.pool)
            .await
            .expect("the rename");
        let ids: Vec<String> = (0..32).map(|n| format!("failing-{n}")).collect();
        let answers = flood(&h.app, &ids).await;
        assert!(
            answers
                .iter()
                .all(|s| *s == StatusCode::SERVICE_UNAVAILABLE),
            "{answers:?}"
        );
        sqlx::query("alter table queue_gone rename to queue")
            .execute(&h.pool)
            .await
            .expect("the rename back");
        assert_eq!(h.written().await, (0, 0));
        assert_eq!(h.adds.get(), 0);
        // Nor logged: the log takes rows in order, so once a later
        // delivery's row is there, theirs would be too.
        assert_eq!(push(&h.app, "after").await, StatusCode::ACCEPTED);
        assert_eq!(logged(&h.pool, &["after"]).await, 1);
    }

    #[tokio::test]
    async fn a_log_that_cannot_be_written_should_not_fail_the_delivery() {
        let h = harness().await;
        // The record comes after the answer: a delivery whose enqueue
        // committed is accepted, whatever becomes of its row in the log.
        sqlx::query("alter table deliveries rename to deliveries_gone")
            .execute(&h.pool)
            .await
            .expect("the rename");
        assert_eq!(push(&h.app, "unlogged-1").await, StatusCode::ACCEPTED);
        assert_eq!(h.written().await, (1, 1));
        assert_eq!(h.adds.get(), 1);
    }
}
