//! The webhook route's decisions that need neither the database nor the
//! network (docs/contract.md#webhooks, docs/contract.md#bounds): the headers before any of the body is read, then,
//! once it is, the signature, the delivery's headers and the payload.
//!
//! Pure functions, so a fuzzer can drive them with any headers and body;
//! every refusal carries the status the route answers.

use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, StatusCode};
use secrecy::SecretString;

use super::event::{self, ParsedDelivery};
use super::signature::{self, SIGNATURE_HEADER};
use crate::metrics::{webhook_event_label, OTHER_EVENT};

/// GitHub caps payloads at 25 MiB; anything larger is not from GitHub.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

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

/// A delivery to persist: signed, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `X-GitHub-Delivery`, or a made-up id when it is missing.
    pub delivery_id: String,
    /// `X-GitHub-Event`, as sent.
    pub event: String,
    pub parsed: ParsedDelivery,
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

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::intake::signature::sign;

    const SECRET: &str = "gate test secret";
    const PING: &[u8] = br#"{"zen": "Keep it logically awesome.", "hook_id": 1}"#;

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
        let signature = sign(SECRET, body);
        let mut pairs = vec![(SIGNATURE_HEADER, signature.as_str())];
        pairs.extend_from_slice(extra);
        headers(&pairs)
    }

    fn secret() -> SecretString {
        SecretString::from(SECRET)
    }

    #[test]
    fn a_declared_length_over_25_mib_should_be_refused_before_the_body() {
        let sig = sign(SECRET, PING);
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
        let sig = sign(SECRET, PING);
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
            (SIGNATURE_HEADER, &sign("not the secret", PING)),
            ("x-github-event", "ping"),
        ]);
        let refusal = after_body(&secret(), &forged, PING).err();
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
                PING,
            ),
            PING,
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
                    PING,
                ),
                PING,
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
            &signed(&[("x-github-event", "star")], PING),
            PING,
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
