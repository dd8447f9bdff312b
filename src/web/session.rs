//! Dashboard sign-in (SPEC §5): an operator signs in with the API token and
//! gets a session cookie signed by the server, so the pages can offer resync
//! buttons while the browser never keeps the token itself.
//!
//! The cookie is `v1.<expiry>.<nonce>.<mac>`, the MAC an HMAC-SHA256 of the
//! expiry and nonce under a key derived from the API token. Nothing is stored
//! on the server: every replica configured with the same token accepts the
//! cookie, and changing the token signs everybody out. The per-session CSRF
//! token is an HMAC of the nonce, so it needs no storage either.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header::{COOKIE, HOST, ORIGIN, REFERER};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::state::AppState;

type HmacSha256 = Hmac<Sha256>;

/// Name of the session cookie.
pub const COOKIE_NAME: &str = "roster_session";

/// How long a sign-in lasts: a working day, so a dashboard left open
/// overnight asks again.
pub const SESSION_SECONDS: i64 = 12 * 60 * 60;

const VERSION: &str = "v1";

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
        // The nonce only tells sessions apart; the MAC protects them, so a
        // predictable nonce gives nothing away.
        let nonce = format!("{:032x}", fastrand::u128(..));
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
        Ok(viewer(&parts.headers, state.api_token.as_ref(), Utc::now()))
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

/// Whether the token typed into the sign-in form is the configured one,
/// compared as SHA-256 digests in constant time (length does not leak).
pub fn token_matches(presented: &str, expected: &SecretString) -> bool {
    let presented = Sha256::digest(presented.as_bytes());
    let expected = Sha256::digest(expected.expose_secret().as_bytes());
    presented.as_slice().ct_eq(expected.as_slice()).into()
}

/// Whether a POST comes from a page of this server: its `Origin` (or, when
/// a browser sends none, its `Referer`) names the host the request was sent
/// to. A request with neither is refused.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let source = headers
        .get(ORIGIN)
        .or_else(|| headers.get(REFERER))
        .and_then(|value| value.to_str().ok())
        .and_then(|value| url::Url::parse(value).ok());
    let Some(source) = source else {
        return false;
    };
    let Some(host) = source.host_str() else {
        return false;
    };
    let authority = match source.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let with_default_port = source
        .port_or_known_default()
        .map(|port| format!("{host}:{port}"));
    ["x-forwarded-host", HOST.as_str()]
        .iter()
        .filter_map(|name| headers.get(*name)?.to_str().ok())
        .any(|target| {
            target.eq_ignore_ascii_case(&authority)
                || with_default_port
                    .as_deref()
                    .is_some_and(|full| target.eq_ignore_ascii_case(full))
        })
}

/// Whether the browser reached this server over https (as the origin of
/// the request shows), so the cookie may be marked `Secure`.
pub fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get(ORIGIN)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|origin| origin.starts_with("https://"))
        || headers
            .get("x-forwarded-proto")
            .and_then(|value| value.to_str().ok())
            .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
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

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn same_origin_should_compare_origin_or_referer_with_the_host() {
        let ok = [
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://roster.example"),
            ]),
            headers(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:8080"),
            ]),
            headers(&[
                ("host", "roster.example:443"),
                ("origin", "https://roster.example"),
            ]),
            headers(&[
                ("host", "10.0.0.5:8080"),
                ("x-forwarded-host", "roster.example"),
                ("origin", "https://roster.example"),
            ]),
            headers(&[
                ("host", "roster.example"),
                ("referer", "https://roster.example/repos/a/b"),
            ]),
        ];
        for h in &ok {
            assert!(same_origin(h), "{h:?}");
        }
        let refused = [
            headers(&[("host", "roster.example")]),
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://evil.example"),
            ]),
            headers(&[("host", "roster.example"), ("origin", "null")]),
            headers(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:9090"),
            ]),
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://evil.example"),
                ("referer", "https://roster.example/"),
            ]),
        ];
        for h in &refused {
            assert!(!same_origin(h), "{h:?}");
        }
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
