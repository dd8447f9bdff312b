//! Sealing the stored App's secrets: ChaCha20-Poly1305 under
//! `ROSTER_SECRET_KEY`, a fresh random nonce each time. A wrong key or a
//! changed byte fails to open instead of yielding garbage.

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

use super::key::SecretKey;

/// What a sealed value is: bound to its ciphertext, so one cannot be
/// passed off as the other.
#[derive(Debug, Clone, Copy)]
pub enum Sealed {
    /// The stored App's secrets.
    App,
    /// The setup token the replicas print.
    LoggedToken,
}

impl Sealed {
    fn context(self) -> &'static [u8] {
        match self {
            Sealed::App => b"roster setup_app v1",
            Sealed::LoggedToken => b"roster setup_tokens v1",
        }
    }
}
const NONCE_LEN: usize = 12;

/// The sealed bytes could not be opened: a different key sealed them, or
/// they were changed.
#[derive(Debug, thiserror::Error)]
#[error("cannot decrypt the GitHub App stored by setup: a different key encrypted it, or it was changed")]
pub struct OpenError;

/// `nonce || ciphertext` of `plain`, the stored App's secrets.
pub fn seal(key: &SecretKey, plain: &[u8]) -> Vec<u8> {
    seal_as(Sealed::App, key, plain)
}

/// The plain bytes [`seal`] sealed with the same key.
pub fn open(key: &SecretKey, sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
    open_as(Sealed::App, key, sealed)
}

/// `nonce || ciphertext` of `plain`, sealed as `what`.
pub fn seal_as(what: Sealed, key: &SecretKey, plain: &[u8]) -> Vec<u8> {
    let cipher = ChaCha20Poly1305::new(Key::from_slice(key.bytes()));
    let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
    let payload = Payload {
        msg: plain,
        aad: what.context(),
    };
    // Encryption fails only for messages beyond 256 GiB.
    let sealed = cipher.encrypt(&nonce, payload).unwrap_or_default();
    let mut out = nonce.to_vec();
    out.extend_from_slice(&sealed);
    out
}

/// The plain bytes [`seal_as`] sealed as `what` with the same key.
pub fn open_as(what: Sealed, key: &SecretKey, sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
    if sealed.len() < NONCE_LEN {
        return Err(OpenError);
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
    let cipher = ChaCha20Poly1305::new(Key::from_slice(key.bytes()));
    let payload = Payload {
        msg: ciphertext,
        aad: what.context(),
    };
    cipher
        .decrypt(Nonce::from_slice(nonce), payload)
        .map_err(|_| OpenError)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_bytes_should_open_with_the_same_key_only() {
        let key = SecretKey::generate();
        let sealed = seal(&key, b"-----BEGIN RSA PRIVATE KEY-----");
        assert!(!sealed.windows(5).any(|w| w == b"BEGIN"));
        assert_eq!(
            open(&key, &sealed).expect("opens"),
            b"-----BEGIN RSA PRIVATE KEY-----"
        );
        assert!(open(&SecretKey::generate(), &sealed).is_err());
        let mut changed = sealed.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(open(&key, &changed).is_err());
        assert!(open(&key, b"short").is_err());
        let token = seal_as(Sealed::LoggedToken, &key, b"token");
        assert!(open(&key, &token).is_err(), "a token is no App");
        assert_eq!(
            open_as(Sealed::LoggedToken, &key, &token).expect("opens"),
            b"token"
        );
    }
}
