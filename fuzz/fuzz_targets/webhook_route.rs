//! Feeds arbitrary headers and bodies to the webhook route's decisions
//! before the database: the checks made before the body is read
//! (`Content-Length`, the signature header), then signature, delivery
//! headers and payload, and the `event` label of the metric.
//!
//! Input layout: header lines `name: value`, an empty line, then the body.
//! A signature header whose value is `SIGN` is replaced by the body's real
//! signature, so signed deliveries are reached too. Besides "does not
//! panic", it checks what docs/contract.md#bounds promises: every refusal is 400, 401 or
//! 413, a declared length past 25 MiB never gets through, every metric
//! label is a known event or `other`, and what a delivery row would keep is
//! short.

#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use libfuzzer_sys::fuzz_target;
use roster::intake::verified::{after_body, before_body, Refusal, MAX_HEADER_CHARS};
use roster::intake::MAX_BODY_BYTES;
use roster::intake::write::{plan, MAX_NAMED_REPOS};
use roster::intake::signature::{sign, SIGNATURE_HEADER};
use roster::metrics::{webhook_event_label, OTHER_EVENT, WEBHOOK_EVENTS};
use secrecy::SecretString;

const SECRET: &str = "fuzz secret";

fn known_label(label: &str) -> bool {
    label == OTHER_EVENT || WEBHOOK_EVENTS.contains(&label)
}

fn check_refusal(refusal: &Refusal) {
    assert!(
        matches!(
            refusal.status,
            StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED | StatusCode::PAYLOAD_TOO_LARGE
        ),
        "{refusal:?}"
    );
    assert!(known_label(refusal.event), "{refusal:?}");
    assert!(!refusal.message.is_empty());
    if let Some((id, event)) = &refusal.record {
        assert!(id.chars().count() <= MAX_HEADER_CHARS, "{refusal:?}");
        assert!(event.chars().count() <= MAX_HEADER_CHARS, "{refusal:?}");
        // Only a signed delivery is ever recorded.
        assert_eq!(refusal.status, StatusCode::BAD_REQUEST, "{refusal:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at], &data[at + 2..]),
        None => (data, &[][..]),
    };
    let mut headers = HeaderMap::new();
    for line in head.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        let Ok(name) = HeaderName::from_bytes(name.trim_ascii()) else {
            continue;
        };
        let value = if name == SIGNATURE_HEADER && value == b"SIGN" {
            HeaderValue::from_str(&sign(SECRET, body)).ok()
        } else {
            HeaderValue::from_bytes(value).ok()
        };
        if let Some(value) = value {
            headers.append(name, value);
        }
    }
    for value in headers.get_all("x-github-event") {
        assert!(known_label(webhook_event_label(&String::from_utf8_lossy(value.as_bytes()))));
    }

    let declared = match before_body(&headers) {
        Ok(declared) => declared,
        Err(refusal) => return check_refusal(&refusal),
    };
    assert!(declared.length.is_none_or(|n| n <= MAX_BODY_BYTES as u64));

    let secret = SecretString::from(SECRET);
    match after_body(&secret, &headers, body) {
        // The route persists it and answers 202.
        Ok(accepted) => {
            assert!(known_label(webhook_event_label(&accepted.event)));
            assert!(accepted.event.chars().count() <= MAX_HEADER_CHARS);
            assert!(accepted.delivery_id.chars().count() <= MAX_HEADER_CHARS);
            let plan = plan(&accepted.parsed.event);
            assert!(plan.known.len() <= MAX_NAMED_REPOS && plan.enqueue.len() <= MAX_NAMED_REPOS);
            assert!(plan.enqueue.iter().all(|id| id.0 > 0), "{plan:?}");
        }
        Err(refusal) => check_refusal(&refusal),
    }
});
