//! What makes a notification verifiable: a signature over the delivery id,
//! the time it was sent and the body, and a delivery id that stays the same
//! across retries.
//!
//! Signing the delivery id and the timestamp along with the body lets a
//! receiver refuse a captured request replayed later: the timestamp cannot
//! be changed without breaking the signature.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// `X-Roster-Signature-256`: `sha256=` and the hex HMAC-SHA256, keyed with
/// the shared secret, of `DELIVERY.TIMESTAMP.BODY`.
pub fn signature(secret: &[u8], delivery: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = hmac(secret);
    mac.update(delivery.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// `X-Roster-Body-Signature-256`: the HMAC of the body alone, the signature
/// receivers written before the timestamp was signed still check. Sent for
/// one release only: it does not stop a replay.
pub fn body_signature(secret: &[u8], body: &[u8]) -> String {
    let mut mac = hmac(secret);
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn hmac(secret: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length, so this never fails.
    <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"))
}

/// `X-Roster-Delivery`: unique per target and change, the same on every
/// retry, so a receiver can drop a repeat.
pub fn delivery_id(target: &str, seq: i64) -> String {
    let digest = Sha256::digest(target.as_bytes());
    format!("{seq}-{}", hex::encode(&digest[..8]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_signature_should_match_a_known_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            body_signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signature_should_cover_delivery_timestamp_and_body() {
        // Python: hmac.new(b"Jefe", b"5-abc.1700000000.what do ya want for
        // nothing?", hashlib.sha256).hexdigest()
        let signed = signature(
            b"Jefe",
            "5-abc",
            1_700_000_000,
            b"what do ya want for nothing?",
        );
        assert_eq!(
            signed,
            "sha256=695aac59c8ae6facbb08a29169311ae0b6a394f5eed314f84ce2829913a125a1"
        );
        let body = b"what do ya want for nothing?";
        assert_ne!(signed, signature(b"Jefe", "5-abc", 1_700_000_001, body));
        assert_ne!(signed, signature(b"Jefe", "6-abc", 1_700_000_000, body));
        assert_ne!(signed, body_signature(b"Jefe", body));
    }

    #[test]
    fn delivery_id_should_be_stable_and_differ_per_target_and_seq() {
        assert_eq!(delivery_id("http://a", 5), delivery_id("http://a", 5));
        assert_ne!(delivery_id("http://a", 5), delivery_id("http://b", 5));
        assert_ne!(delivery_id("http://a", 5), delivery_id("http://a", 6));
        assert!(delivery_id("http://a", 5).starts_with("5-"));
    }
}
