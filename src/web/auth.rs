//! Bearer-token check for the write API (docs/contract.md#http-routes), under the failure
//! throttle it shares with the dashboard's sign-in (docs/contract.md#bounds).

use std::time::Instant;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::state::AppState;
use super::throttle::Attempt;
use super::throttle_key::client_of;

/// Proof that the request carried the configured API token; a write
/// handler takes it as an argument so it cannot forget the check.
#[derive(Debug)]
pub struct WriteAccess(());

impl FromRequestParts<AppState> for WriteAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let expected = state.api_token.as_ref().ok_or(ApiError::Forbidden)?;
        let client = client_of(parts, state.trust_proxy);
        // A missing token counts as a wrong one: both fail to authenticate.
        let presented = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(bearer_token);
        let attempt = state.auth_throttle.attempt(client, Instant::now(), || {
            presented.is_some_and(|token| tokens_match(token, expected))
        });
        match attempt {
            Attempt::Right => Ok(Self(())),
            Attempt::Wrong { locked } => {
                if locked {
                    tracing::warn!(
                        %client,
                        "write API: too many wrong tokens from this client, locked out of the API and sign-in"
                    );
                } else {
                    tracing::warn!(%client, "write API: missing or wrong token");
                }
                Err(ApiError::Unauthorized)
            }
            Attempt::Locked { wait } => {
                tracing::debug!(%client, "write API: refused, the client is locked out");
                Err(ApiError::TooManyTries { wait })
            }
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
pub(crate) fn tokens_match(presented: &str, expected: &SecretString) -> bool {
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
