//! Bearer-token check for the write API (SPEC §5).

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::state::AppState;

/// Proof that the request carried the configured API token; a write
/// handler takes it as an argument so it cannot forget the check.
#[derive(Debug)]
pub struct WriteAccess(());

impl FromRequestParts<AppState> for WriteAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let expected = state.api_token.as_ref().ok_or(ApiError::Forbidden)?;
        let presented = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token)
            .ok_or(ApiError::Unauthorized)?;
        if tokens_match(presented, expected) {
            Ok(Self(()))
        } else {
            Err(ApiError::Unauthorized)
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value (scheme is
/// case-insensitive, as RFC 7235 says).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares SHA-256 digests in constant time: equal-length inputs, so
/// neither the content nor the length of the token leaks through timing.
fn tokens_match(presented: &str, expected: &SecretString) -> bool {
    let presented = Sha256::digest(presented.as_bytes());
    let expected = Sha256::digest(expected.expose_secret().as_bytes());
    presented.as_slice().ct_eq(expected.as_slice()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_should_take_the_token_after_the_scheme() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearer"), None);
    }

    #[test]
    fn tokens_should_match_only_when_equal() {
        let expected = SecretString::from("s3cret");
        assert!(tokens_match("s3cret", &expected));
        assert!(!tokens_match("s3cre", &expected));
        assert!(!tokens_match("s3cret2", &expected));
        assert!(!tokens_match("", &expected));
    }
}
