//! `POST /webhooks/github` (SPEC §6): size, then signature, then headers and
//! JSON; then everything the event implies is persisted before the answer.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use secrecy::SecretString;
use serde_json::{json, Value};
use sqlx::PgPool;

use super::deliveries::{self, NewDelivery};
use super::event::{self, ParsedDelivery};
use super::intake;
use super::signature::{self, SIGNATURE_HEADER};
use crate::db::queue::PgQueue;
use crate::metrics::Metrics;

/// Where GitHub sends deliveries.
pub const PATH: &str = "/webhooks/github";

/// GitHub caps payloads at 25 MiB; anything larger is not from GitHub.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// GitHub gives up after 10 s; answering 503 before then keeps its log
/// truthful (a failure a redelivery recovers) even when the database hangs.
pub const PERSIST_TIMEOUT: Duration = Duration::from_secs(8);

/// Label for deliveries whose event name cannot be trusted (unsigned) or
/// is absent, so a forger cannot mint metric series.
const UNVERIFIED: &str = "unverified";

/// What the webhook route needs.
#[derive(Clone)]
pub struct WebhookState {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub secret: SecretString,
    pub metrics: Arc<Metrics>,
}

/// The webhook route alone, to be merged into the server's router.
pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route(
            PATH,
            post(receive).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)),
        )
        .with_state(Arc::new(state))
}

async fn receive(
    State(state): State<Arc<WebhookState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            state.metrics.webhook(UNVERIFIED, "too_large");
            return error(StatusCode::PAYLOAD_TOO_LARGE, "body exceeds 25 MiB");
        }
        Err(rejection) => {
            state.metrics.webhook(UNVERIFIED, "rejected");
            return error(StatusCode::BAD_REQUEST, &rejection.body_text());
        }
    };

    let signature = headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
    if let Err(e) = signature::verify(&state.secret, signature, &body) {
        state.metrics.webhook(UNVERIFIED, "unauthorized");
        return error(StatusCode::UNAUTHORIZED, &e.to_string());
    }

    let delivery_id = header(&headers, "x-github-delivery")
        .map(str::to_owned)
        .unwrap_or_else(unidentified_delivery);
    let Some(event_name) = header(&headers, "x-github-event") else {
        state.metrics.webhook(UNVERIFIED, "rejected");
        reject(&state.pool, &delivery_id, "unknown").await;
        return error(StatusCode::BAD_REQUEST, "missing X-GitHub-Event header");
    };

    let parsed = match event::parse(event_name, &body) {
        Ok(parsed) => parsed,
        Err(e) => {
            state.metrics.webhook(event_name, "rejected");
            reject(&state.pool, &delivery_id, event_name).await;
            return error(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };

    let persisted = tokio::time::timeout(
        PERSIST_TIMEOUT,
        persist(&state, &delivery_id, event_name, &parsed),
    )
    .await
    .unwrap_or(Err(PersistError::TimedOut));
    match persisted {
        Ok(answer) => answer,
        Err(e) => {
            tracing::error!(delivery = %delivery_id, event = event_name, error = %e,
                "webhook not persisted; GitHub will show it failed");
            state.metrics.webhook(event_name, "error");
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
    Intake(#[from] intake::IntakeError),
    #[error(transparent)]
    Deliveries(#[from] deliveries::DeliveriesError),
    #[error("webhook transaction: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database did not answer within {PERSIST_TIMEOUT:?}")]
    TimedOut,
}

/// Enqueues what the event implies and records the delivery in one
/// transaction; answers 202 only once it has committed. Workers are woken
/// after the commit, so they find the rows; a failure or a timeout drops the
/// transaction, which rolls back: nothing enqueued, nothing recorded.
async fn persist(
    state: &WebhookState,
    delivery_id: &str,
    event_name: &str,
    parsed: &ParsedDelivery,
) -> Result<Response, PersistError> {
    let mut tx = state.pool.begin().await?;
    let intake = intake::apply(&mut tx, state.queue.as_ref(), &parsed.event).await?;
    let outcome = intake.outcome();
    deliveries::record(
        &mut *tx,
        &NewDelivery {
            id: delivery_id,
            event: event_name,
            action: parsed.action.as_deref(),
            repo: parsed.repo.as_deref(),
            outcome,
        },
    )
    .await?;
    tx.commit().await?;
    state.queue.enqueued(intake.enqueued.len() as u64);
    state.metrics.webhook(event_name, outcome);
    tracing::info!(delivery = %delivery_id, event = event_name, action = ?parsed.action,
        repo = ?parsed.repo, outcome, enqueued = intake.enqueued.len(), "webhook");
    let body = match &intake.ignored {
        Some(reason) => json!({ "status": outcome, "event": event_name, "reason": reason }),
        None => json!({
            "status": outcome,
            "event": event_name,
            "repo_ids": intake.enqueued,
            "listing_requested": intake.listing_requested,
        }),
    };
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// Records a signed delivery that could not be understood. Best effort: the
/// answer is 400 whatever the database says, since redelivering it cannot
/// help.
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

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// GitHub always sends `X-GitHub-Delivery`; a signed delivery without one is
/// still handled, and logged under a made-up id that GitHub's log never has.
fn unidentified_delivery() -> String {
    format!("unidentified-{:016x}", fastrand::u64(..))
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
    use crate::github::webhook::signature::sign;

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
