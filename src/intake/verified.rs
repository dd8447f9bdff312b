//! A delivery whose signature matched and whose payload was understood, as
//! an axum extractor: the route's handler receives only such deliveries and
//! never sees a body before its signature was checked (verify-then-parse).
//!
//! The checks keep their order (docs/contract.md#webhooks, docs/contract.md#bounds): the headers before any of the
//! body is read (a declared length over 25 MiB: 413; a missing or malformed
//! signature: 401), then a turn to read the body ([`super::admission`];
//! none in time: 503), then the body, its signature, the delivery's headers
//! and the payload. A refusal is answered by the extractor itself.

use std::sync::Arc;

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use sqlx::PgPool;

use super::answer;
use super::body::{self, BodyError};
use super::deliveries::{self, NewDelivery};
use super::gate::{self, Accepted, Refusal};
use super::state::{Route, WebhookState};
use crate::metrics::OTHER_EVENT;

/// A signed, understood delivery, ready to be persisted.
#[derive(Debug)]
pub struct VerifiedDelivery(pub Accepted);

impl FromRequest<Arc<Route>> for VerifiedDelivery {
    /// The answer to the refused delivery, already counted (and, for a
    /// signed delivery that could not be understood, recorded).
    type Rejection = Response;

    async fn from_request(request: Request, route: &Arc<Route>) -> Result<Self, Response> {
        let state = &route.state;
        let (parts, body) = request.into_parts();
        let declared = match gate::before_body(&parts.headers) {
            Ok(declared) => declared,
            Err(refusal) => return Err(refuse(state, refusal).await),
        };
        // The turn is taken before a byte of the body is read, and given
        // back once the body is verified and parsed (the body is dropped
        // with it).
        let turn = match route.admission.admit(declared.length).await {
            Ok(turn) => turn,
            Err(busy) => {
                state.metrics.webhook(OTHER_EVENT, "busy");
                return Err(answer::busy(busy));
            }
        };
        let decided = match body::read(body, declared.length).await {
            Ok(bytes) => gate::after_body(&state.secret, &parts.headers, &bytes),
            Err(BodyError::TooLarge) => Err(gate::too_large()),
            Err(e @ BodyError::Broken(_)) => {
                state.metrics.webhook(OTHER_EVENT, "rejected");
                return Err(answer::error(StatusCode::BAD_REQUEST, &e.to_string()));
            }
        };
        drop(turn);
        match decided {
            Ok(accepted) => Ok(Self(accepted)),
            Err(refusal) => Err(refuse(state, refusal).await),
        }
    }
}

/// Answers a refusal, recording a signed delivery that could not be
/// understood. The record is best effort: the answer is 400 whatever the
/// database says, since redelivering it cannot help.
async fn refuse(state: &WebhookState, refusal: Refusal) -> Response {
    state.metrics.webhook(refusal.event, refusal.outcome);
    if let Some((id, event)) = &refusal.record {
        reject(&state.pool, id, event).await;
    }
    answer::error(refusal.status, &refusal.message)
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::routing::post;
    use axum::Router;
    use secrecy::SecretString;
    use tower::ServiceExt;

    use super::*;

    use crate::intake::admission::{Admission, WebhookLimits};
    use crate::intake::group::{GroupCommit, GroupLimits};
    use crate::intake::signature::{sign, SIGNATURE_HEADER};
    use crate::metrics::Metrics;

    const SECRET: &str = "extractor test secret";
    const PING: &[u8] = br#"{"zen": "Design for failure.", "hook_id": 1}"#;

    /// A route whose handler only counts the deliveries it is handed.
    async fn counting_route() -> (Router, PgPool, Arc<AtomicUsize>) {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let queue = crate::testing::queue(&pool);
        let state = WebhookState {
            pool: pool.clone(),
            queue: queue.clone(),
            secret: SecretString::from(SECRET),
            metrics: Arc::new(Metrics::new(
                &mut prometheus_client::registry::Registry::default(),
            )),
            limits: WebhookLimits::default(),
            free_pushes: None,
            shutdown: crate::shutdown::channel().1,
        };
        let route = Route {
            admission: Arc::new(Admission::new(state.limits)),
            group: GroupCommit::new(
                pool.clone(),
                queue,
                GroupLimits::default(),
                crate::shutdown::channel().1,
            ),
            state,
        };
        let handled = Arc::new(AtomicUsize::new(0));
        let count = handled.clone();
        let app = Router::new()
            .route(
                "/hook",
                post(
                    move |VerifiedDelivery(accepted): VerifiedDelivery| async move {
                        count.fetch_add(1, Ordering::SeqCst);
                        format!("{} {}", accepted.event, accepted.delivery_id)
                    },
                ),
            )
            .with_state(Arc::new(route));
        (app, pool, handled)
    }

    async fn send(app: &Router, signature: Option<String>, body: &[u8]) -> (StatusCode, String) {
        let mut request = axum::http::Request::post("/hook")
            .header("x-github-event", "ping")
            .header("x-github-delivery", "d-7");
        if let Some(signature) = signature {
            request = request.header(SIGNATURE_HEADER, signature);
        }
        let request = request
            .body(Body::from(body.to_vec()))
            .expect("a valid request");
        let answer = app.clone().oneshot(request).await.expect("an answer");
        let status = answer.status();
        let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .expect("the body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    async fn recorded(pool: &PgPool) -> i64 {
        sqlx::query_scalar("select count(*) from deliveries")
            .fetch_one(pool)
            .await
            .expect("a count")
    }

    #[tokio::test]
    async fn refused_deliveries_should_be_answered_by_the_extractor_and_never_reach_the_handler() {
        let (app, pool, handled) = counting_route().await;
        let (status, _) = send(&app, None, PING).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = send(&app, Some(sign("not the secret", PING)), PING).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        // Signed but not JSON: refused, and recorded as rejected.
        let (status, body) = send(&app, Some(sign(SECRET, b"{")), b"{").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(handled.load(Ordering::SeqCst), 0);
        assert_eq!(recorded(&pool).await, 1);
    }

    #[tokio::test]
    async fn a_signed_delivery_should_reach_the_handler_verified_and_parsed() {
        let (app, pool, handled) = counting_route().await;
        let (status, body) = send(&app, Some(sign(SECRET, PING)), PING).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "ping d-7"));
        assert_eq!(handled.load(Ordering::SeqCst), 1);
        // Persisting is the handler's part: the extractor wrote nothing.
        assert_eq!(recorded(&pool).await, 0);
    }
}
