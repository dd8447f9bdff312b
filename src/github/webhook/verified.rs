//! A delivery whose signature matched and whose payload was understood, as
//! an axum extractor: the route's handler receives only such deliveries and
//! never sees a body before its signature was checked (verify-then-parse).
//!
//! The checks keep their order (SPEC §6, §8): the headers before any of the
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
