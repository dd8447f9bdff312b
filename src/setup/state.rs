//! The manifest flow's `state`: a random nonce and its HMAC-SHA256 under
//! `ROSTER_SECRET_KEY`. The signature tells a state this Roster issued from
//! a forged one before the database is asked; the database row (see
//! `store`) makes it single-use and bounds its age.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::key::{random_hex, SecretKey};

type HmacSha256 = Hmac<Sha256>;

/// Separates these signatures from any other use of the key.
const LABEL: &[u8] = b"roster setup state\0";

/// A new state: `NONCE.SIGNATURE`, and its nonce (the database key).
pub fn issue(key: &SecretKey) -> (String, String) {
    let nonce = random_hex(16);
    let state = format!("{nonce}.{}", hex::encode(signature(key, &nonce)));
    (state, nonce)
}

/// The nonce of `state` when this key signed it; `None` for anything else.
pub fn verify(key: &SecretKey, state: &str) -> Option<String> {
    let (nonce, signed) = state.split_once('.')?;
    if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let signed = hex::decode(signed).ok()?;
    mac(key, nonce).verify_slice(&signed).ok()?;
    Some(nonce.to_owned())
}

fn mac(key: &SecretKey, nonce: &str) -> HmacSha256 {
    // HMAC takes keys of any length, so this never fails.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key.bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(LABEL);
    mac.update(nonce.as_bytes());
    mac
}

fn signature(key: &SecretKey, nonce: &str) -> Vec<u8> {
    mac(key, nonce).finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_should_verify_under_its_key_only() {
        let key = SecretKey::generate();
        let (state, nonce) = issue(&key);
        assert_eq!(verify(&key, &state), Some(nonce.clone()));
        assert_eq!(verify(&SecretKey::generate(), &state), None);
        let forged = format!("{nonce}.{}", "00".repeat(32));
        assert_eq!(verify(&key, &forged), None);
        assert_eq!(verify(&key, "nonsense"), None);
        assert_eq!(verify(&key, ""), None);
        let other = format!("{}.{}", "a".repeat(32), &state[33..]);
        assert_eq!(verify(&key, &other), None);
    }
}
