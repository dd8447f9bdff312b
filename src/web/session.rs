//! Dashboard sign-in (docs/contract.md#http-routes): an operator signs in with the API token and
//! gets a session cookie signed by the server, so the pages can offer resync
//! buttons while the browser never keeps the token itself.
//!
//! The cookie is `v1.<expiry>.<id>.<mac>`, the MAC an HMAC-SHA256 of the
//! expiry and the session id under a key derived from the API token, so
//! every replica configured with the same token accepts it, and changing the
//! token signs everybody out. Signing out records the id as revoked in
//! PostgreSQL until the cookie would have expired (docs/contract.md#bounds, see
//! [`crate::web::revocation`]): the one thing the server stores, and only
//! for sessions that ended early. The per-session CSRF token is an HMAC of
//! the id, so it needs no storage either.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header::COOKIE;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::OsRng;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::revocation;
use super::state::AppState;

type HmacSha256 = Hmac<Sha256>;

/// Name of the session cookie.
pub const COOKIE_NAME: &str = "roster_session";

/// How long a sign-in lasts: a working day, so a dashboard left open
/// overnight asks again.
pub const SESSION_SECONDS: i64 = 12 * 60 * 60;

const VERSION: &str = "v1";

/// 128 bits from the operating system's generator, as 32 hex digits.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The key that signs sessions, derived from the API token.
pub struct SessionKey([u8; 32]);

impl SessionKey {
    pub fn from_token(token: &SecretString) -> Self {
        Self(mac(
            b"roster dashboard session key",
            &[token.expose_secret().as_bytes()],
        ))
    }

    /// A new session valid for [`SESSION_SECONDS`] from `now`, as the
    /// cookie's value.
    pub fn issue(&self, now: DateTime<Utc>) -> String {
        let expires = now.timestamp() + SESSION_SECONDS;
        // The id tells sessions apart and names the one to revoke; the MAC
        // protects them, but an id is also what a sign-out revokes and what
        // the CSRF token is made from, so it comes from the operating
        // system's generator, never from a seedable one.
        let nonce = session_id();
        let signature = hex::encode(self.sign_session(expires, &nonce));
        format!("{VERSION}.{expires}.{nonce}.{signature}")
    }

    /// The session a cookie value stands for, when the server signed it and
    /// it has not expired.
    pub fn verify(&self, value: &str, now: DateTime<Utc>) -> Option<Session> {
        let mut parts = value.split('.');
        let (version, expires, nonce, signature) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || version != VERSION {
            return None;
        }
        let expires: i64 = expires.parse().ok()?;
        let signature = hex::decode(signature).ok()?;
        let expected = self.sign_session(expires, nonce);
        if !bool::from(expected.as_slice().ct_eq(&signature)) || expires <= now.timestamp() {
            return None;
        }
        Some(Session {
            id: nonce.to_owned(),
            expires_at: DateTime::from_timestamp(expires, 0)?,
            csrf: hex::encode(mac(&self.0, &[b"csrf", nonce.as_bytes()])),
        })
    }

    fn sign_session(&self, expires: i64, nonce: &str) -> [u8; 32] {
        mac(
            &self.0,
            &[b"session", expires.to_string().as_bytes(), nonce.as_bytes()],
        )
    }
}

/// A signed-in operator's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Tells this sign-in apart from others; what signing out revokes.
    pub id: String,
    /// When the cookie stops working anyway; a revocation is kept until then.
    pub expires_at: DateTime<Utc>,
    /// Goes into every form as a hidden field and must come back with it.
    pub csrf: String,
}

impl Session {
    /// Whether a form carried this session's CSRF token (constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        self.csrf.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

/// Who is looking at a page: an operator with a session, or anybody.
/// Never fails: without a valid cookie the dashboard is read-only.
#[derive(Debug, Clone, Default)]
pub struct Viewer {
    pub session: Option<Session>,
    /// A token is configured, so signing in is possible at all.
    pub can_sign_in: bool,
}

impl Viewer {
    pub fn signed_in(&self) -> bool {
        self.session.is_some()
    }

    /// The CSRF token for the page's forms (empty when not signed in).
    pub fn csrf(&self) -> &str {
        self.session.as_ref().map_or("", |s| s.csrf.as_str())
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        let mut viewer = viewer(&parts.headers, state.api_token.as_ref(), Utc::now());
        // Only a cookie the server signed costs a query: strangers' cookies
        // never reach the database.
        if let Some(session) = &viewer.session {
            match revocation::is_revoked(&state.pool, &session.id).await {
                Ok(false) => {}
                Ok(true) => viewer.session = None,
                Err(error) => {
                    // Without an answer the session may have ended: read-only.
                    tracing::warn!(%error, "cannot check whether a session was signed out");
                    viewer.session = None;
                }
            }
        }
        Ok(viewer)
    }
}

/// The viewer of a request with these headers, given the configured token.
pub fn viewer(headers: &HeaderMap, token: Option<&SecretString>, now: DateTime<Utc>) -> Viewer {
    let Some(token) = token else {
        return Viewer::default();
    };
    let key = SessionKey::from_token(token);
    let session = cookie_values(headers, COOKIE_NAME).find_map(|value| key.verify(value, now));
    Viewer {
        session,
        can_sign_in: true,
    }
}

/// Every value of cookie `name` in the request's `Cookie` headers.
fn cookie_values<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(COOKIE)
        .into_iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(move |pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key == name).then_some(value)
        })
}

/// The `Set-Cookie` value that signs a browser in. `secure` adds `Secure`
/// (when the dashboard is served over https).
pub fn session_cookie(value: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{COOKIE_NAME}={value}; Max-Age={SESSION_SECONDS}; Path=/; HttpOnly; SameSite=Strict{secure}"
    )
}

/// The `Set-Cookie` value that signs a browser out.
pub fn clear_cookie() -> String {
    format!("{COOKIE_NAME}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length, so this never fails.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    for part in parts {
        // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default()
    }

    fn key(token: &str) -> SessionKey {
        SessionKey::from_token(&SecretString::from(token))
    }

    #[test]
    fn session_ids_should_not_repeat_when_a_seedable_generator_is_seeded_alike() {
        // fastrand's generator is seedable and predictable: the same seed
        // gives the same numbers, so an id drawn from it repeats here.
        fastrand::seed(7);
        let first = key("t").verify(&key("t").issue(now()), now());
        fastrand::seed(7);
        let second = key("t").verify(&key("t").issue(now()), now());
        let (Some(first), Some(second)) = (first, second) else {
            panic!("an issued session did not verify");
        };
        assert_ne!(first.id, second.id);
        for id in [&first.id, &second.id] {
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
                "{id}"
            );
        }
    }

    #[test]
    fn issued_session_should_verify_until_it_expires() {
        let cookie = key("t").issue(now());
        let session = key("t").verify(&cookie, now());
        assert!(session.is_some());
        let later = now() + chrono::Duration::seconds(SESSION_SECONDS - 1);
        assert_eq!(key("t").verify(&cookie, later), session);
        let expired = now() + chrono::Duration::seconds(SESSION_SECONDS);
        assert_eq!(key("t").verify(&cookie, expired), None);
    }

    #[test]
    fn session_should_not_verify_under_another_token_or_when_altered() {
        let cookie = key("t").issue(now());
        assert_eq!(key("other").verify(&cookie, now()), None);
        let mut parts: Vec<String> = cookie.split('.').map(str::to_owned).collect();
        parts[1] = (now().timestamp() + 10 * SESSION_SECONDS).to_string();
        assert_eq!(key("t").verify(&parts.join("."), now()), None);
        for bad in [
            "",
            "v1",
            "v1.1.2",
            "v1.x.y.z",
            "v2.1.2.3",
            &format!("{cookie}.x"),
        ] {
            assert_eq!(key("t").verify(bad, now()), None, "{bad}");
        }
    }

    #[test]
    fn a_session_should_carry_its_id_and_end_for_revocation() {
        let cookie = key("t").issue(now());
        let Some(session) = key("t").verify(&cookie, now()) else {
            panic!("the session should verify");
        };
        assert_eq!(cookie.split('.').nth(2), Some(session.id.as_str()));
        assert_eq!(session.id.len(), 32);
        assert_eq!(
            session.expires_at,
            now() + chrono::Duration::seconds(SESSION_SECONDS)
        );
        let other = key("t").verify(&key("t").issue(now()), now());
        assert_ne!(other.map(|s| s.id), Some(session.id));
    }

    #[test]
    fn sessions_should_have_their_own_csrf_tokens() {
        let a = key("t").verify(&key("t").issue(now()), now());
        let b = key("t").verify(&key("t").issue(now()), now());
        let (Some(a), Some(b)) = (a, b) else {
            panic!("sessions should verify");
        };
        assert_ne!(a.csrf, b.csrf);
        assert!(a.csrf_matches(&a.csrf.clone()));
        assert!(!a.csrf_matches(&b.csrf));
        assert!(!a.csrf_matches(""));
    }

    #[test]
    fn viewer_should_read_the_session_cookie_among_others() {
        let token = SecretString::from("t");
        let cookie = key("t").issue(now());
        let line = format!("theme=dark; {COOKIE_NAME}={cookie}; x=1");
        let mut map = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&line) {
            map.insert(COOKIE, value);
        }
        let signed_in = viewer(&map, Some(&token), now());
        assert!(signed_in.signed_in());
        assert!(!signed_in.csrf().is_empty());
        assert!(!viewer(&map, None, now()).signed_in());
        assert!(!viewer(&HeaderMap::new(), Some(&token), now()).signed_in());
    }

    #[test]
    fn cookies_should_be_http_only_strict_and_scoped_to_the_site() {
        let set = session_cookie("v", false);
        assert_eq!(
            set,
            "roster_session=v; Max-Age=43200; Path=/; HttpOnly; SameSite=Strict"
        );
        assert!(session_cookie("v", true).ends_with("; Secure"));
        assert!(clear_cookie().contains("Max-Age=0"));
    }
}
