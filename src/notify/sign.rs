//! What makes a notification verifiable: the signature of its body and a
//! delivery id that stays the same across retries.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// `X-Roster-Signature-256`: `sha256=` and the hex HMAC-SHA256 of `body`
/// keyed with the shared secret.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes keys of any length, so this never fails.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
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
    fn signature_should_match_a_known_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn delivery_id_should_be_stable_and_differ_per_target_and_seq() {
        assert_eq!(delivery_id("http://a", 5), delivery_id("http://a", 5));
        assert_ne!(delivery_id("http://a", 5), delivery_id("http://b", 5));
        assert_ne!(delivery_id("http://a", 5), delivery_id("http://a", 6));
        assert!(delivery_id("http://a", 5).starts_with("5-"));
    }
}
