//! A delivery whose signature matched and whose payload was understood, as
//! an axum extractor: the route's handler receives only such deliveries and
//! never sees a body before its signature was checked (verify-then-parse).
//!
//! The checks keep their order (docs/contract.md#webhooks, docs/contract.md#bounds): the headers before any of the
//! body is read (a declared length over 25 MiB: 413; a missing or malformed
//! signature: 401), then a turn to read the body ([`super::admission`];
//! none in time: 503), then the body (not all of it within its deadline:
//! 408), its signature, the delivery's headers
//! and the payload. A refusal is answered by the extractor itself.
//!
//! The decisions that need neither the database nor the network
//! ([`before_body`], [`after_body`]) are pure functions, so a fuzzer can
//! drive them with any headers and body; every refusal carries the status
//! the route answers.

use std::sync::Arc;

use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use secrecy::SecretString;
use sqlx::PgPool;

use super::admission::{Busy, Sender};
use super::body::{self, BodyError, MAX_BODY_BYTES};
use super::deliveries::{self, NewDelivery};
use super::event::{self, Accepted};
use super::signature::{self, SIGNATURE_HEADER};
use super::state::{Route, WebhookState};
use crate::metrics::{webhook_event_label, OTHER_EVENT};

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
        let declared = match before_body(&parts.headers) {
            Ok(declared) => declared,
            Err(refusal) => return Err(refuse(state, refusal).await),
        };
        // The turn is taken before a byte of the body is read, and given
        // back once the body is verified and parsed (the body is dropped
        // with it).
        let sender = parts.extensions.get::<Sender>().copied();
        let turn = match route.admission.admit(declared.length, sender).await {
            Ok(turn) => turn,
            Err(busy) => {
                state.metrics.webhook(OTHER_EVENT, "busy");
                return Err(busy_answer(busy));
            }
        };
        let deadline = turn.deadline();
        let read = tokio::time::timeout(deadline, body::read(body, declared.length)).await;
        let decided = match read {
            Ok(Ok(bytes)) => after_body(&state.secret, &parts.headers, &bytes),
            Ok(Err(BodyError::TooLarge)) => Err(too_large()),
            Ok(Err(e @ BodyError::Broken(_))) => {
                state.metrics.webhook(OTHER_EVENT, "rejected");
                return Err(error_answer(StatusCode::BAD_REQUEST, &e.to_string()));
            }
            Err(_) => {
                state.metrics.webhook(OTHER_EVENT, "slow");
                return Err(slow_answer(deadline));
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
    error_answer(refusal.status, &refusal.message)
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

/// The longest `X-GitHub-Delivery` and `X-GitHub-Event` kept. GitHub's are
/// a 36-character GUID and names under 40 characters; each delivery row
/// keeps both, so a longer value would only fill the disk.
pub const MAX_HEADER_CHARS: usize = 100;

/// The event stored for a signed delivery whose `X-GitHub-Event` is
/// missing or unusable.
pub const UNKNOWN_EVENT: &str = "unknown";

/// A delivery refused before anything is written: the route answers
/// `status` with `{"error": message}` and counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 400, 401 or 413.
    pub status: StatusCode,
    /// `outcome` of `roster_webhooks_total`.
    pub outcome: &'static str,
    /// `event` of `roster_webhooks_total`.
    pub event: &'static str,
    pub message: String,
    /// `(delivery id, event)` of a signed delivery that could not be
    /// understood: it is recorded as `rejected`.
    pub record: Option<(String, String)>,
}

/// What the headers say about the body before it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    /// `Content-Length`, when sent; a chunked body has none.
    pub length: Option<u64>,
}

/// Checks what can be checked before reading the body: a declared length
/// over [`MAX_BODY_BYTES`] (413) and a missing or malformed signature (401)
/// are refused without reading a byte of it.
pub fn before_body(headers: &HeaderMap) -> Result<Declared, Refusal> {
    let length = content_length(headers)?;
    if length.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    signature::parse_header(headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes()))
        .map_err(|e| unauthorized(e.to_string()))?;
    Ok(Declared { length })
}

/// Checks the signature of `body`, then the delivery's headers, then parses
/// the payload: verify-then-parse, nothing reads the body before its
/// signature matched.
pub fn after_body(
    secret: &SecretString,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Accepted, Refusal> {
    if body.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    let claimed = headers.get(SIGNATURE_HEADER).map(|v| v.as_bytes());
    signature::verify(secret, claimed, body).map_err(|e| unauthorized(e.to_string()))?;

    let delivery_id = match header(headers, "x-github-delivery") {
        None => unidentified_delivery(),
        Some(id) if id.chars().count() > MAX_HEADER_CHARS => {
            return Err(rejected(
                format!("X-GitHub-Delivery is longer than {MAX_HEADER_CHARS} characters"),
                None,
            ))
        }
        Some(id) => id.to_owned(),
    };
    let event = match header(headers, "x-github-event") {
        None => {
            return Err(rejected(
                "missing X-GitHub-Event header".to_owned(),
                Some((delivery_id, UNKNOWN_EVENT.to_owned())),
            ))
        }
        Some(event) if event.chars().count() > MAX_HEADER_CHARS => {
            return Err(rejected(
                format!("X-GitHub-Event is longer than {MAX_HEADER_CHARS} characters"),
                Some((delivery_id, UNKNOWN_EVENT.to_owned())),
            ))
        }
        Some(event) => event.to_owned(),
    };
    // Pushes, most of the deliveries, straight to their one-pass reader.
    let parsed = match event.as_str() {
        "push" => event::parse_push(body).or_else(|_| event::parse(&event, body)),
        _ => event::parse(&event, body),
    };
    match parsed {
        Ok(parsed) => Ok(Accepted {
            delivery_id,
            event,
            parsed,
        }),
        Err(e) => Err(Refusal {
            event: webhook_event_label(&event),
            ..rejected(e.to_string(), Some((delivery_id, event)))
        }),
    }
}

/// The refusal of a body found larger than [`MAX_BODY_BYTES`] while read.
pub fn too_large() -> Refusal {
    Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        outcome: "too_large",
        event: OTHER_EVENT,
        message: "body exceeds 25 MiB".to_owned(),
        record: None,
    }
}

/// `Content-Length` as a number; several that differ, or one that is not a
/// number, are refused (hyper refuses them too before the route sees them).
fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Refusal> {
    let mut length = None;
    for value in headers.get_all(CONTENT_LENGTH) {
        let parsed = value
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .map(|v| v.parse::<u64>().unwrap_or(u64::MAX));
        match (parsed, length) {
            (None, _) => return Err(bad_length("is not a number of bytes")),
            (Some(n), Some(seen)) if n != seen => {
                return Err(bad_length("is sent twice with different values"))
            }
            (Some(n), _) => length = Some(n),
        }
    }
    Ok(length)
}

fn bad_length(why: &str) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        outcome: "rejected",
        event: OTHER_EVENT,
        message: format!("Content-Length {why}"),
        record: None,
    }
}

fn unauthorized(message: String) -> Refusal {
    Refusal {
        status: StatusCode::UNAUTHORIZED,
        outcome: "unauthorized",
        event: OTHER_EVENT,
        message,
        record: None,
    }
}

fn rejected(message: String, record: Option<(String, String)>) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        outcome: "rejected",
        event: OTHER_EVENT,
        message,
        record,
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

/// `{"error": message}` with `status`: every webhook answer but 202.
pub(super) fn error_answer(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message });
    (status, axum::Json(body)).into_response()
}

/// 408: the body did not arrive within its deadline; the connection is
/// closed with the answer, the rest of the body unread.
fn slow_answer(deadline: std::time::Duration) -> Response {
    let mut answer = error_answer(
        StatusCode::REQUEST_TIMEOUT,
        &format!(
            "the body did not arrive within {:.1} s of its turn",
            deadline.as_secs_f64()
        ),
    );
    answer.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    answer
}

/// 503 with `Retry-After`: every turn to read a body stayed taken.
fn busy_answer(busy: Busy) -> Response {
    let mut answer = error_answer(StatusCode::SERVICE_UNAVAILABLE, &busy.to_string());
    answer.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from(busy.retry_after.as_secs()),
    );
    answer
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::http::HeaderValue;
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

    // The pure decisions, header by header.

    const GATE_SECRET: &str = "gate test secret";
    const GATE_PING: &[u8] = br#"{"zen": "Keep it logically awesome.", "hook_id": 1}"#;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.append(*name, value);
            }
        }
        map
    }

    fn signed(extra: &[(&'static str, &str)], body: &[u8]) -> HeaderMap {
        let signature = sign(GATE_SECRET, body);
        let mut pairs = vec![(SIGNATURE_HEADER, signature.as_str())];
        pairs.extend_from_slice(extra);
        headers(&pairs)
    }

    fn secret() -> SecretString {
        SecretString::from(GATE_SECRET)
    }

    #[test]
    fn a_declared_length_over_25_mib_should_be_refused_before_the_body() {
        let sig = sign(GATE_SECRET, GATE_PING);
        let over = (MAX_BODY_BYTES + 1).to_string();
        let refusal = before_body(&headers(&[
            ("content-length", &over),
            (SIGNATURE_HEADER, &sig),
        ]));
        assert_eq!(
            refusal.map_err(|r| r.status),
            Err(StatusCode::PAYLOAD_TOO_LARGE)
        );
        let huge = headers(&[("content-length", "99999999999999999999999999")]);
        assert_eq!(
            before_body(&huge).map_err(|r| r.status),
            Err(StatusCode::PAYLOAD_TOO_LARGE)
        );
        let exact = MAX_BODY_BYTES.to_string();
        let fits = before_body(&headers(&[
            ("content-length", &exact),
            (SIGNATURE_HEADER, &sig),
        ]));
        assert_eq!(
            fits,
            Ok(Declared {
                length: Some(MAX_BODY_BYTES as u64)
            })
        );
    }

    #[test]
    fn a_length_that_is_not_one_number_should_be_refused() {
        for bad in [&["-1"][..], &["12abc"], &[""], &["+5"], &["10", "11"]] {
            let pairs: Vec<(&'static str, &str)> =
                bad.iter().map(|v| ("content-length", *v)).collect();
            let refusal = before_body(&headers(&pairs)).err();
            assert_eq!(
                refusal.map(|r| r.status),
                Some(StatusCode::BAD_REQUEST),
                "{bad:?}"
            );
        }
        let sig = sign(GATE_SECRET, GATE_PING);
        let same_twice = headers(&[
            ("content-length", "10"),
            ("content-length", "10"),
            (SIGNATURE_HEADER, &sig),
        ]);
        assert_eq!(before_body(&same_twice), Ok(Declared { length: Some(10) }));
    }

    #[test]
    fn a_missing_or_malformed_signature_should_be_refused_before_the_body() {
        for pairs in [
            &[][..],
            &[(SIGNATURE_HEADER, "sha256=nothex")],
            &[(SIGNATURE_HEADER, "md5=00")],
        ] {
            let refusal = before_body(&headers(pairs)).err();
            assert_eq!(
                refusal.as_ref().map(|r| r.status),
                Some(StatusCode::UNAUTHORIZED)
            );
            assert_eq!(refusal.map(|r| r.event), Some(OTHER_EVENT));
        }
    }

    #[test]
    fn a_wrong_signature_should_be_refused_whatever_the_event_header_says() {
        let forged = headers(&[
            (SIGNATURE_HEADER, &sign("not the secret", GATE_PING)),
            ("x-github-event", "ping"),
        ]);
        let refusal = after_body(&secret(), &forged, GATE_PING).err();
        assert_eq!(
            refusal.as_ref().map(|r| r.status),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            refusal.map(|r| (r.event, r.record)),
            Some((OTHER_EVENT, None))
        );
    }

    #[test]
    fn a_signed_ping_should_be_accepted_with_its_ids() {
        let accepted = after_body(
            &secret(),
            &signed(
                &[("x-github-event", "ping"), ("x-github-delivery", "d-1")],
                GATE_PING,
            ),
            GATE_PING,
        );
        let accepted = accepted.map(|a| (a.delivery_id, a.event));
        assert_eq!(accepted, Ok(("d-1".to_owned(), "ping".to_owned())));
    }

    #[test]
    fn overlong_delivery_or_event_headers_should_be_refused() {
        let long = "x".repeat(MAX_HEADER_CHARS + 1);
        // An overlong id is no record; an overlong event name is recorded
        // under the delivery's id as unknown.
        let cases = [
            (("ping", long.as_str()), None),
            (
                (long.as_str(), "d-2"),
                Some(("d-2".to_owned(), UNKNOWN_EVENT.to_owned())),
            ),
        ];
        for ((event, delivery), record) in cases {
            let refusal = after_body(
                &secret(),
                &signed(
                    &[("x-github-event", event), ("x-github-delivery", delivery)],
                    GATE_PING,
                ),
                GATE_PING,
            )
            .err();
            assert_eq!(
                refusal.as_ref().map(|r| r.status),
                Some(StatusCode::BAD_REQUEST)
            );
            assert_eq!(refusal.and_then(|r| r.record), record);
        }
    }

    #[test]
    fn an_unknown_event_name_should_count_as_other_but_be_kept_for_the_log() {
        let accepted = after_body(
            &secret(),
            &signed(&[("x-github-event", "star")], GATE_PING),
            GATE_PING,
        );
        assert_eq!(accepted.map(|a| a.event), Ok("star".to_owned()));
        let refusal = after_body(
            &secret(),
            &signed(&[("x-github-event", "evil-1")], b"{"),
            b"{",
        )
        .err();
        assert_eq!(refusal.as_ref().map(|r| r.event), Some(OTHER_EVENT));
        assert_eq!(
            refusal.and_then(|r| r.record).map(|(_, e)| e),
            Some("evil-1".to_owned())
        );
        let refusal = after_body(
            &secret(),
            &signed(&[("x-github-event", "push")], b"{"),
            b"{",
        )
        .err();
        assert_eq!(refusal.map(|r| r.event), Some("push"));
    }
}
