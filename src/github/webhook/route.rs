//! `POST /webhooks/github` (SPEC §6, §8): the headers, then a turn to read
//! the body, then signature, headers and JSON; then everything the event
//! implies is persisted before the answer.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use secrecy::SecretString;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::admission::{Admission, Busy, WebhookLimits};
use super::body::{self, BodyError};
use super::deliveries::{self, NewDelivery};
use super::gate::{self, Accepted, Refusal};
use super::group::{GroupCommit, GroupError, GroupLimits};
use crate::db::queue::PgQueue;
use crate::metrics::{Metrics, OTHER_EVENT};

/// Where GitHub sends deliveries.
pub const PATH: &str = "/webhooks/github";

/// GitHub gives up after 10 s; answering 503 before then keeps its log
/// truthful (a failure a redelivery recovers) even when the database hangs.
pub const PERSIST_TIMEOUT: Duration = Duration::from_secs(8);

/// What the webhook route needs.
#[derive(Clone)]
pub struct WebhookState {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub secret: SecretString,
    pub metrics: Arc<Metrics>,
    /// How many bodies are read at once, and how long the rest wait.
    pub limits: WebhookLimits,
}

/// The state and the turns it hands out.
struct Route {
    state: WebhookState,
    admission: Arc<Admission>,
    group: GroupCommit,
}

/// The webhook route alone, to be merged into the server's router. Its
/// bounds are `state.limits`: tests shorten the wait there.
pub fn router(state: WebhookState) -> Router {
    router_with_admission(state).0
}

/// Like [`router`], also handing out the route's [`Admission`], so that a
/// test can see when every slot is taken instead of guessing.
pub fn router_with_admission(state: WebhookState) -> (Router, Arc<Admission>) {
    let admission = Arc::new(Admission::new(state.limits));
    let group = GroupCommit::new(
        state.pool.clone(),
        state.queue.clone(),
        GroupLimits::default(),
    );
    let route = Route {
        state,
        admission: admission.clone(),
        group,
    };
    let router = Router::new()
        .route(PATH, post(receive))
        .with_state(Arc::new(route));
    (router, admission)
}

async fn receive(State(route): State<Arc<Route>>, request: Request) -> Response {
    let state = &route.state;
    let (parts, body) = request.into_parts();
    let declared = match gate::before_body(&parts.headers) {
        Ok(declared) => declared,
        Err(refusal) => return refuse(state, refusal).await,
    };
    // The turn is taken before a byte of the body is read, and given back
    // once the body is verified and parsed (the body is dropped with it).
    let turn = match route.admission.admit(declared.length).await {
        Ok(turn) => turn,
        Err(busy) => {
            state.metrics.webhook(OTHER_EVENT, "busy");
            return busy_answer(busy);
        }
    };
    let decided = match body::read(body, declared.length).await {
        Ok(bytes) => gate::after_body(&state.secret, &parts.headers, &bytes),
        Err(BodyError::TooLarge) => Err(gate::too_large()),
        Err(e @ BodyError::Broken(_)) => {
            state.metrics.webhook(OTHER_EVENT, "rejected");
            return error(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    drop(turn);
    let accepted = match decided {
        Ok(accepted) => accepted,
        Err(refusal) => return refuse(state, refusal).await,
    };

    let (delivery_id, event) = (accepted.delivery_id.clone(), accepted.event.clone());
    let persisted = tokio::time::timeout(PERSIST_TIMEOUT, persist(&route, accepted))
        .await
        .unwrap_or(Err(PersistError::TimedOut));
    match persisted {
        Ok(answer) => answer,
        Err(e) => {
            tracing::error!(delivery = %delivery_id, event,
                error = %e, "webhook not persisted; GitHub will show it failed");
            state.metrics.webhook(&event, "error");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "could not persist the delivery; redeliver it later",
            )
        }
    }
}

/// Why a delivery could not be persisted (answers 503).
#[derive(Debug, thiserror::Error)]
enum PersistError {
    #[error(transparent)]
    Group(#[from] GroupError),
    #[error("database did not answer within {PERSIST_TIMEOUT:?}")]
    TimedOut,
}

/// Enqueues what the event implies and records the delivery in one
/// transaction, shared with the deliveries that arrived at the same time
/// ([`GroupCommit`]); answers 202 only once it has committed. Workers are
/// woken after the commit, so they find the rows; a failure or a timeout
/// rolls the group back: nothing enqueued, nothing recorded.
///
/// The answer carries counts, never the ids: a payload may name hundreds
/// of thousands of repositories.
async fn persist(route: &Route, accepted: Accepted) -> Result<Response, PersistError> {
    let Accepted {
        delivery_id,
        event,
        parsed,
    } = accepted;
    let (action, repo) = (parsed.action.clone(), parsed.repo.clone());
    let intake = route
        .group
        .submit(Accepted {
            delivery_id: delivery_id.clone(),
            event: event.clone(),
            parsed,
        })
        .await?;
    let outcome = intake.outcome();
    route.state.metrics.webhook(&event, outcome);
    tracing::info!(delivery = %delivery_id, event, action = ?action,
        repo = ?repo, outcome, enqueued = intake.enqueued, "webhook");
    let body = match &intake.ignored {
        Some(reason) => json!({ "status": outcome, "event": event, "reason": reason }),
        None => json!({
            "status": outcome,
            "event": event,
            "enqueued": intake.enqueued,
            "listing_requested": intake.listing_requested,
        }),
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// Answers a refusal, recording a signed delivery that could not be
/// understood. The record is best effort: the answer is 400 whatever the
/// database says, since redelivering it cannot help.
async fn refuse(state: &WebhookState, refusal: Refusal) -> Response {
    state.metrics.webhook(refusal.event, refusal.outcome);
    if let Some((id, event)) = &refusal.record {
        reject(&state.pool, id, event).await;
    }
    error(refusal.status, &refusal.message)
}

async fn reject(pool: &PgPool, id: &str, event: &str) {
    let delivery = NewDelivery {
        id,
        event,
        action: None,
        repo: None,
        outcome: "rejected",
    };
    if let Err(e) = deliveries::record(pool, &delivery).await {
        tracing::warn!(delivery = %id, error = %e, "rejected delivery not recorded");
    }
}

fn busy_answer(busy: Busy) -> Response {
    let mut answer = error(StatusCode::SERVICE_UNAVAILABLE, &busy.to_string());
    answer.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(busy.retry_after.as_secs()),
    );
    answer
}

fn error(status: StatusCode, message: &str) -> Response {
    let body: Value = json!({ "error": message });
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use prometheus_client::metrics::counter::Counter;
    use tower::ServiceExt;

    use super::*;
    use crate::github::webhook::signature::{sign, SIGNATURE_HEADER};

    const SECRET: &str = "route test secret";

    struct Harness {
        app: Router,
        pool: PgPool,
        adds: Counter,
    }

    async fn harness() -> Harness {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let adds = Counter::default();
        let queue =
            PgQueue::new(pool.clone(), Duration::from_secs(60)).with_adds_counter(adds.clone());
        let metrics = Arc::new(Metrics::new(
            &mut prometheus_client::registry::Registry::default(),
        ));
        let app = router(WebhookState {
            pool: pool.clone(),
            queue: Arc::new(queue),
            secret: SecretString::from(SECRET),
            metrics,
            limits: WebhookLimits::default(),
        });
        Harness { app, pool, adds }
    }

    async fn push(app: &Router, id: &str) -> StatusCode {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks/push.default-branch-created.json");
        let body = std::fs::read(&path).expect("the push fixture");
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

    #[tokio::test]
    async fn accepted_delivery_should_commit_its_writes_and_count_the_enqueue() {
        let h = harness().await;
        assert_eq!(push(&h.app, "ok-1").await, StatusCode::ACCEPTED);
        assert_eq!(count(&h.pool, "repositories").await, 1);
        assert_eq!(count(&h.pool, "queue").await, 1);
        assert_eq!(count(&h.pool, "deliveries").await, 1);
        assert_eq!(h.adds.get(), 1);
    }

    async fn flood(app: &Router, ids: &[String]) -> Vec<StatusCode> {
        futures_util::future::join_all(ids.iter().map(|id| push(app, id))).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deliveries_arriving_together_should_commit_in_shared_transactions() {
        let h = harness().await;
        // One id twice: a group must write it once, as a redelivery.
        let mut ids: Vec<String> = (0..64).map(|n| format!("together-{n}")).collect();
        ids.push("together-0".to_owned());
        let answers = flood(&h.app, &ids).await;
        assert!(
            answers.iter().all(|s| *s == StatusCode::ACCEPTED),
            "{answers:?}"
        );
        assert_eq!(count(&h.pool, "deliveries").await, 64);
        assert_eq!(count(&h.pool, "repositories").await, 1);
        assert_eq!(count(&h.pool, "queue").await, 1);
        // Rows of one transaction share its `now()`: fewer distinct times
        // than deliveries means some were committed together.
        let commits: i64 = sqlx::query_scalar("select count(distinct at) from deliveries")
            .fetch_one(&h.pool)
            .await
            .expect("a count");
        assert!(commits < 64, "every delivery had a commit of its own");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_group_should_answer_503_to_each_delivery_and_write_nothing() {
        let h = harness().await;
        sqlx::query("alter table deliveries rename to deliveries_gone")
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
        assert_eq!(count(&h.pool, "repositories").await, 0);
        assert_eq!(count(&h.pool, "queue").await, 0);
        assert_eq!(h.adds.get(), 0);
    }

    #[tokio::test]
    async fn delivery_whose_record_fails_should_roll_back_everything_and_answer_503() {
        let h = harness().await;
        // The record is the delivery's last write: failing it must undo the
        // repository and the enqueue written before it.
        sqlx::query("alter table deliveries rename to deliveries_gone")
            .execute(&h.pool)
            .await
            .expect("the rename");
        assert_eq!(
            push(&h.app, "fails-1").await,
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(count(&h.pool, "repositories").await, 0);
        assert_eq!(count(&h.pool, "queue").await, 0);
        assert_eq!(count(&h.pool, "deliveries_gone").await, 0);
        assert_eq!(h.adds.get(), 0);
    }
}
