//! Dashboard sessions under attack (docs/contract.md#bounds): a cookie copied before its
//! owner signed out, and cross-site forms that forge `X-Forwarded-Host` to
//! pass the same-origin check. Every refusal is checked both for its answer
//! and for leaving the queue and the listing schedule alone.

use crate::support;
use crate::support::seed::Seed;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use roster::controller::WorkQueue;
use roster::db::queue::PgQueue;
use sqlx::PgPool;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};

const TOKEN: &str = "session-t0ken";
const HOST: &str = "roster.test";
const ORIGIN: &str = "http://roster.test";

const OPTIONS: Options = Options {
    api_token: Some(TOKEN),
    github_web_url: None,
};

async fn fixture(trust_proxy: bool) -> Fixture {
    let f = router::fixture_tuned(
        OPTIONS,
        |_, _| {},
        |state| {
            state.trust_proxy = trust_proxy;
        },
    )
    .await;
    Seed::new(&f.pool).repo(1, "acme", "api").await;
    f
}

/// A form POST as a browser sends it: `Host`, then `headers`, then the
/// cookie when given.
async fn post_form(
    app: &Router,
    uri: &str,
    body: String,
    headers: &[(&str, &str)],
    cookie: Option<&str>,
) -> Answer {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if !headers.iter().any(|(name, _)| *name == "host") {
        request = request.header(header::HOST, HOST);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(app, request.body(Body::from(body)).expect("request")).await
}

async fn get_page(app: &Router, uri: &str, cookie: &str) -> Answer {
    let request = Request::get(uri)
        .header(header::HOST, HOST)
        .header(header::COOKIE, cookie)
        .body(Body::empty())
        .expect("request");
    send(app, request).await
}

/// Signs in from the dashboard's own page; returns the `Cookie` header value.
async fn sign_in(app: &Router) -> String {
    let answer = post_form(
        app,
        "/signin",
        format!("token={TOKEN}"),
        &[("origin", ORIGIN)],
        None,
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer.header(header::SET_COOKIE);
    set.split(';').next().unwrap_or_default().to_owned()
}

/// The CSRF token of the page's forms, or `None` when it has none (the
/// viewer is not signed in).
async fn csrf(app: &Router, cookie: &str) -> Option<String> {
    let page = get_page(app, "/", cookie).await.body;
    let marker = "name=\"csrf\" value=\"";
    let start = page.find(marker)? + marker.len();
    page[start..].split('"').next().map(str::to_owned)
}

/// What the forms would change: the queue and the listing request.
async fn registered(pool: &PgPool, queue: &Arc<PgQueue>) -> (u64, bool) {
    let requested = sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("schedule");
    (queue.depth().await.expect("depth"), requested)
}

async fn revoked_ids(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar("select id from revoked_sessions order by id")
        .fetch_all(pool)
        .await
        .expect("revoked sessions")
}

#[tokio::test]
async fn signing_out_should_end_the_session_on_the_server() {
    let f = fixture(false).await;
    let copied = sign_in(&f.app).await;
    let other = sign_in(&f.app).await;
    let copied_csrf = csrf(&f.app, &copied).await.expect("signed in");
    let other_csrf = csrf(&f.app, &other).await.expect("signed in");

    let out = post_form(
        &f.app,
        "/signout",
        format!("csrf={copied_csrf}"),
        &[("origin", ORIGIN)],
        Some(&copied),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER, "{}", out.body);
    assert!(out.header(header::SET_COOKIE).contains("Max-Age=0"));
    let before = registered(&f.pool, &f.queue).await;

    // The copy of the cookie is a reader's now, on this replica...
    let page = get_page(&f.app, "/", &copied).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains("Resync all"), "{}", page.body);
    assert!(!page.body.contains("Sign out"));
    assert_eq!(csrf(&f.app, &copied).await, None);
    for uri in ["/resync", "/repos/acme/api/resync"] {
        let answer = post_form(
            &f.app,
            uri,
            format!("csrf={copied_csrf}"),
            &[("origin", ORIGIN)],
            Some(&copied),
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{uri}: {}",
            answer.body
        );
        assert!(answer.body.contains("sign in with the API token first"));
    }
    // ...and on another replica of the same database.
    let replica = router::app_on(&f.pool, &f.queue, OPTIONS, |_, _| {}, |_| {});
    let elsewhere = post_form(
        &replica,
        "/resync",
        format!("csrf={copied_csrf}"),
        &[("origin", ORIGIN)],
        Some(&copied),
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::UNAUTHORIZED);
    assert_eq!(csrf(&replica, &copied).await, None);
    // Signing out again is refused the same way.
    let again = post_form(
        &f.app,
        "/signout",
        format!("csrf={copied_csrf}"),
        &[("origin", ORIGIN)],
        Some(&copied),
    )
    .await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        registered(&f.pool, &f.queue).await,
        before,
        "nothing changed"
    );

    // Only that session ended: another sign-in still acts.
    let acted = post_form(
        &f.app,
        "/resync",
        format!("csrf={other_csrf}"),
        &[("origin", ORIGIN)],
        Some(&other),
    )
    .await;
    assert_eq!(acted.status, StatusCode::SEE_OTHER, "{}", acted.body);
    assert!(
        registered(&f.pool, &f.queue).await.1,
        "a listing was requested"
    );
}

#[tokio::test]
async fn signing_out_should_forget_revocations_past_their_expiry() {
    let f = fixture(false).await;
    sqlx::query(
        "insert into revoked_sessions (id, expires_at)
         values ('expired', now() - interval '1 second'), ('live', now() + interval '1 hour')",
    )
    .execute(&f.pool)
    .await
    .expect("insert revocations");
    let cookie = sign_in(&f.app).await;
    let token = csrf(&f.app, &cookie).await.expect("signed in");
    let out = post_form(
        &f.app,
        "/signout",
        format!("csrf={token}"),
        &[("origin", ORIGIN)],
        Some(&cookie),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);

    let ids = revoked_ids(&f.pool).await;
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"live".to_owned()), "{ids:?}");
    assert!(!ids.contains(&"expired".to_owned()), "{ids:?}");
    // The new row is the signed-out session's, kept until its cookie's end.
    let kept: bool = sqlx::query_scalar(
        "select expires_at between now() + interval '11 hours' and now() + interval '12 hours'
         from revoked_sessions where id <> 'live'",
    )
    .fetch_one(&f.pool)
    .await
    .expect("the new revocation");
    assert!(kept);
}

#[tokio::test]
async fn a_forged_forwarded_host_should_not_pass_the_same_origin_check() {
    let f = fixture(false).await;
    let cookie = sign_in(&f.app).await;
    let token = csrf(&f.app, &cookie).await.expect("signed in");
    let before = registered(&f.pool, &f.queue).await;

    // Another site's page, with `X-Forwarded-Host` naming that site.
    let forged = [
        ("origin", "https://evil.example"),
        ("x-forwarded-host", "evil.example"),
        ("x-forwarded-proto", "https"),
    ];
    for uri in ["/resync", "/repos/acme/api/resync"] {
        let answer = post_form(&f.app, uri, format!("csrf={token}"), &forged, Some(&cookie)).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{uri}: {}",
            answer.body
        );
        assert!(
            answer.body.contains("cross-site request refused"),
            "{}",
            answer.body
        );
    }
    let sign_in = post_form(&f.app, "/signin", format!("token={TOKEN}"), &forged, None).await;
    assert_eq!(sign_in.status, StatusCode::FORBIDDEN);
    assert!(sign_in.headers.get(header::SET_COOKIE).is_none());
    let sign_out = post_form(
        &f.app,
        "/signout",
        format!("csrf={token}"),
        &forged,
        Some(&cookie),
    )
    .await;
    assert_eq!(sign_out.status, StatusCode::FORBIDDEN);
    assert_eq!(
        registered(&f.pool, &f.queue).await,
        before,
        "nothing changed"
    );
    assert!(
        revoked_ids(&f.pool).await.is_empty(),
        "the session was not ended"
    );
    assert!(csrf(&f.app, &cookie).await.is_some(), "still signed in");
}

#[tokio::test]
async fn a_trusted_proxy_should_name_the_host_and_the_scheme() {
    let f = fixture(true).await;
    // The proxy reaches Roster by an internal address and says what the
    // browser asked for.
    let proxied = [
        ("host", "10.0.0.5:8080"),
        ("x-forwarded-host", "roster.example"),
        ("x-forwarded-proto", "https"),
        ("origin", "https://roster.example"),
    ];
    let answer = post_form(&f.app, "/signin", format!("token={TOKEN}"), &proxied, None).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer.header(header::SET_COOKIE);
    assert!(set.ends_with("; Secure"), "{set}");
    let cookie = set.split(';').next().unwrap_or_default().to_owned();
    let token = csrf(&f.app, &cookie).await.expect("signed in");
    let before = registered(&f.pool, &f.queue).await;

    // A page of the internal address is not the proxied site's.
    let internal = [
        ("host", "10.0.0.5:8080"),
        ("x-forwarded-host", "roster.example"),
        ("origin", "http://10.0.0.5:8080"),
    ];
    let answer = post_form(
        &f.app,
        "/resync",
        format!("csrf={token}"),
        &internal,
        Some(&cookie),
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);
    assert_eq!(
        registered(&f.pool, &f.queue).await,
        before,
        "nothing changed"
    );

    let answer = post_form(
        &f.app,
        "/resync",
        format!("csrf={token}"),
        &proxied,
        Some(&cookie),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert!(
        registered(&f.pool, &f.queue).await.1,
        "a listing was requested"
    );
}

#[tokio::test]
async fn without_trust_a_proxied_sign_in_should_get_no_secure_cookie_from_forwarded_proto() {
    let f = fixture(false).await;
    let cookie = post_form(
        &f.app,
        "/signin",
        format!("token={TOKEN}"),
        &[("origin", ORIGIN), ("x-forwarded-proto", "https")],
        None,
    )
    .await;
    assert_eq!(cookie.status, StatusCode::SEE_OTHER);
    assert!(!cookie.header(header::SET_COOKIE).contains("Secure"));
}
