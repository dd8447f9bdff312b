//! `X-Hub-Signature-256` verification: the HMAC-SHA256 of the raw body with
//! the webhook secret, compared in constant time before anything is parsed.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Name of the header GitHub signs each delivery with.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

const PREFIX: &str = "sha256=";

/// Why a delivery's signature was refused; each one answers 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    #[error("malformed X-Hub-Signature-256 header: expected sha256=<64 hex digits>")]
    Malformed,
    #[error("X-Hub-Signature-256 does not match the body")]
    Mismatch,
}

/// Checks `header` (the raw header value, if any) against `body`.
///
/// The comparison runs in constant time (`Mac::verify_slice`), so a forger
/// learns nothing from how long a refusal takes.
pub fn verify(
    secret: &SecretString,
    header: Option<&[u8]>,
    body: &[u8],
) -> Result<(), SignatureError> {
    let expected = parse_header(header)?;
    mac(secret.expose_secret(), body)
        .verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

/// The digest a header claims, or why it cannot claim one. Needs no body:
/// the route refuses a missing or malformed header before reading any.
pub fn parse_header(header: Option<&[u8]>) -> Result<[u8; 32], SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let hex_digest = header
        .strip_prefix(PREFIX.as_bytes())
        .ok_or(SignatureError::Malformed)?;
    // Checked before decoding, so a long header costs nothing.
    if hex_digest.len() != 64 {
        return Err(SignatureError::Malformed);
    }
    let mut digest = [0u8; 32];
    hex::decode_to_slice(hex_digest, &mut digest).map_err(|_| SignatureError::Malformed)?;
    Ok(digest)
}

/// The header value GitHub would send for `body`: senders in tests and
/// benchmarks sign with it.
pub fn sign(secret: &str, body: &[u8]) -> String {
    format!(
        "{PREFIX}{}",
        hex::encode(mac(secret, body).finalize().into_bytes())
    )
}

fn mac(secret: &str, body: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length, so this never fails.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    // The example from GitHub's "Validating webhook deliveries" page.
    const SECRET: &str = "It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";
    const EXPECTED: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    fn secret() -> SecretString {
        SecretString::from(SECRET)
    }

    #[test]
    fn sign_should_match_githubs_documented_example() {
        assert_eq!(sign(SECRET, BODY), EXPECTED);
    }

    #[test]
    fn verify_should_accept_githubs_documented_example() {
        assert_eq!(verify(&secret(), Some(EXPECTED.as_bytes()), BODY), Ok(()));
    }

    #[test]
    fn verify_should_refuse_a_missing_header() {
        assert_eq!(verify(&secret(), None, BODY), Err(SignatureError::Missing));
    }

    #[test]
    fn verify_should_refuse_a_header_without_the_sha256_prefix() {
        let bare = EXPECTED.trim_start_matches("sha256=");
        assert_eq!(
            verify(&secret(), Some(bare.as_bytes()), BODY),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(&secret(), Some(b"sha1=abcdef"), BODY),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn verify_should_refuse_hex_that_is_not_a_sha256_digest() {
        assert_eq!(
            verify(&secret(), Some(b"sha256=zz"), BODY),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(&secret(), Some(b"sha256=abcd"), BODY),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn verify_should_refuse_a_changed_body() {
        assert_eq!(
            verify(&secret(), Some(EXPECTED.as_bytes()), b"Hello, World?"),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn verify_should_refuse_another_secret() {
        let other = SecretString::from("another secret");
        assert_eq!(
            verify(&other, Some(EXPECTED.as_bytes()), BODY),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn parse_header_should_need_no_body_to_refuse_a_bad_header() {
        assert_eq!(parse_header(None), Err(SignatureError::Missing));
        for bad in [
            &b""[..],
            b"sha256=",
            b"sha256=zz",
            b"sha1=00",
            &[b'a'; 70_000],
        ] {
            assert_eq!(parse_header(Some(bad)), Err(SignatureError::Malformed));
        }
        assert!(parse_header(Some(EXPECTED.as_bytes())).is_ok());
    }

    #[test]
    fn verify_should_accept_uppercase_hex() {
        let upper = format!("sha256={}", EXPECTED[7..].to_uppercase());
        assert_eq!(verify(&secret(), Some(upper.as_bytes()), BODY), Ok(()));
    }
}
