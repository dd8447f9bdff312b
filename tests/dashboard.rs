//! The dashboard's pages (docs/contract.md#http-routes) against a real PostgreSQL: what each page
//! shows, that repository data is escaped, sign-in and sign-out, and the
//! resync forms with their cross-site request protection.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use crate::support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use roster::controller::WorkQueue;
use roster::intake::deliveries::{record, NewDelivery};
use roster::project::{Fields, Project, ProjectName};
use roster::registry::testing::PastEvent;
use roster::source::RepoId;
use roster::web::serve::{serve, ClientAddr};
use sqlx::PgPool;
use support::http::Answer;
use support::router::{self, send, Fixture, Options};
use support::seed::{event, link, Seed};

const TOKEN: &str = "dashboard-t0ken";
const HOST: &str = "roster.test";
const ORIGIN: &str = "http://roster.test";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

const GITHUB: Options = Options {
    api_token: Some(TOKEN),
    github_web_url: Some("https://github.com"),
};

async fn fixture_with(options: Options) -> Fixture {
    router::fixture(options, |_, metrics| {
        metrics.rate_limit_remaining(roster::source::InstallationId(7), 4321)
    })
    .await
}

async fn fixture() -> Fixture {
    fixture_with(GITHUB).await
}

/// A GET as a browser sends it, with the session cookie when given.
async fn get_as(app: &Router, uri: &str, cookie: Option<&str>) -> Answer {
    let mut request = Request::get(uri).header(header::HOST, HOST);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(app, request.body(Body::empty()).expect("request")).await
}

async fn get(app: &Router, uri: &str) -> Answer {
    get_as(app, uri, None).await
}

/// A form POST; `origin` `None` sends neither Origin nor Referer.
async fn post_form(
    app: &Router,
    uri: &str,
    body: &str,
    cookie: Option<&str>,
    origin: Option<&str>,
) -> Answer {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    send(
        app,
        request.body(Body::from(body.to_owned())).expect("request"),
    )
    .await
}

/// Signs in and returns the `Cookie` header value of the session.
async fn sign_in(app: &Router) -> String {
    let answer = post_form(
        app,
        "/signin",
        &format!("token={TOKEN}&next=%2F"),
        None,
        Some(ORIGIN),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    let set = answer.header(header::SET_COOKIE);
    set.split(';').next().unwrap_or_default().to_owned()
}

/// The "Next page" link of a page, decoded from HTML.
fn next_href(page: &str) -> Option<String> {
    let before = &page[..page.find("rel=\"next\"")?];
    let href = before.rsplit("href=\"").next()?;
    Some(href.split('"').next()?.replace("&#38;", "&"))
}

/// Whether markup holds an `on…=` attribute (inline script by another name).
fn has_event_handler(page: &str) -> bool {
    page.match_indices(" on").any(|(i, _)| {
        let rest = &page[i + 3..];
        let name_len = rest.chars().take_while(char::is_ascii_lowercase).count();
        name_len > 0 && rest[name_len..].starts_with('=')
    })
}

/// The CSRF token in a page's forms.
fn csrf_of(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let start = page.find(marker).map(|i| i + marker.len());
    let start = start.unwrap_or_else(|| panic!("no CSRF field in:\n{page}"));
    page[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// One project as the seeded files declare it, with its name, owner and tags.
fn project(name: &str, owner: &str, tags: &str) -> String {
    format!(
        "  - name: {name}
    owner: {owner}
    description: Takes payments at checkout
    lifecycle: production
    tags: [{tags}]
    links:
      - title: Runbook
        url: https://runbooks.example.com/checkout
    labels:
      tier: \"1\"
      cluster: eu-west-1
"
    )
}

/// A project file of `projects`, each from [`project`].
fn file(projects: &[String]) -> String {
    format!("projects:\n{}", projects.concat())
}

/// acme/api synced three minutes ago with two entries, acme/web invalid
/// (its entry kept from an earlier sync), acme/pay in error (its timeline
/// one failure 53 times in a row), acme/shop in conflict with acme/api over
/// `checkout-api`.
async fn seed(pool: &PgPool) {
    let seed = Seed::new(pool);
    let api = file(&[
        project("checkout-api", "team-payments", "payments, grpc"),
        project("checkout-worker", "team-payments", "payments"),
    ]);
    seed.repo(1, "acme", "api")
        .await
        .synced(SHA, &api)
        .await
        .last_synced(Duration::from_secs(3 * 60))
        .await
        .timeline(&[event("synced", "applied 2 entries", Duration::ZERO)])
        .await;
    seed.repo(2, "acme", "web")
        .await
        .synced(SHA, &file(&[project("web-front", "team-web", "web")]))
        .await
        .invalid(
            "project.yaml:4:8: owner: must not be empty\nproject.yaml:9:3: tags[0]: not a name",
        )
        .await;
    seed.repo(3, "acme", "pay")
        .await
        .failed("GitHub answered 502 Bad Gateway\nwhile reading project.yaml")
        .await
        .timeline(&[PastEvent {
            count: 53,
            ..event("error", "GitHub answered 502", Duration::ZERO)
        }])
        .await;
    let shop = file(&[project("checkout-api", "team-shop", "shop")]);
    seed.repo(4, "acme", "shop")
        .await
        .in_conflict(SHA, &shop)
        .await
        .last_synced(Duration::from_secs(3 * 60))
        .await;
}

#[tokio::test]
async fn overview_should_show_counts_linking_to_filtered_lists_and_the_table() {
    let f = fixture().await;
    seed(&f.pool).await;

    let page = get(&f.app, "/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.header(header::CONTENT_TYPE).starts_with("text/html"));
    let body = &page.body;
    for status in ["synced", "invalid", "error", "conflict", "pending"] {
        assert!(
            body.contains(&format!("href=\"/?status={status}\"")),
            "{status}: {body}"
        );
    }
    assert!(body.contains("<strong>1</strong> of 4 synced"), "{body}");
    assert!(body.contains("invalid: 1"));
    // The table: badge with text, name linking to the detail, projects,
    // short sha linking to the commit, relative time with the exact one.
    assert!(body.contains("<span class=\"badge status-error\">"));
    assert!(body.contains("href=\"/repos/acme/api\""));
    assert!(body.contains(
        "<a href=\"/projects/checkout-api\">checkout-api</a>, \
         <a href=\"/projects/checkout-worker\">checkout-worker</a>"
    ));
    assert!(body.contains(&format!(
        "<a href=\"https://github.com/acme/api/commit/{SHA}\" rel=\"noopener noreferrer\">0123456</a>"
    )));
    assert!(body.contains("title=\"20"), "exact time on hover: {body}");
    assert!(body.contains(">3 min ago</time>"), "{body}");
    assert!(body.contains("GitHub answered 502 Bad Gateway"));
    assert!(
        !body.contains("while reading project.yaml"),
        "only the first line of an error in the table"
    );
    // No resync for readers who did not sign in.
    assert!(!body.contains("Resync all"));
    assert!(body.contains("href=\"/signin\""));
}

#[tokio::test]
async fn overview_should_filter_search_and_page_through_the_list() {
    let f = fixture().await;
    seed(&f.pool).await;

    let errors = get(&f.app, "/?status=error").await;
    assert!(errors.body.contains(">acme/pay</a>"));
    assert!(!errors.body.contains(">acme/api</a>"));
    assert!(errors.body.contains("<option value=\"error\" selected>"));

    let searched = get(&f.app, "/?q=SHO").await;
    assert!(searched.body.contains(">acme/shop</a>"));
    assert!(!searched.body.contains(">acme/pay</a>"));
    assert!(searched.body.contains("value=\"SHO\""));

    // Follow "Next page" links through the whole list, one per page.
    let mut uri = "/?limit=1".to_owned();
    let mut seen = Vec::new();
    for _ in 0..10 {
        let page = get(&f.app, &uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.body);
        for name in ["acme/api", "acme/pay", "acme/shop", "acme/web"] {
            if page.body.contains(&format!(">{name}</a>")) {
                seen.push(name);
            }
        }
        let next = next_href(&page.body);
        match next {
            Some(href) => uri = href,
            None => break,
        }
    }
    assert_eq!(seen, ["acme/api", "acme/pay", "acme/shop", "acme/web"]);
}

#[tokio::test]
async fn overview_should_show_the_budget_the_queue_and_the_listing() {
    let f = fixture().await;
    seed(&f.pool).await;
    let seed = Seed::new(&f.pool);
    let minutes = |m: u64| Duration::from_secs(m * 60);
    seed.retrying(3, 2, "GitHub answered 502", minutes(4)).await;
    seed.queued(1, minutes(5)).await;
    seed.listing_ran(minutes(20), minutes(18)).await;

    let body = get(&f.app, "/").await.body;
    assert!(body.contains("installation 7"), "{body}");
    assert!(body.contains("<b>4,321</b> requests left"), "{body}");
    assert!(body.contains("<strong>2</strong> queued"), "{body}");
    assert!(body.contains("1 ready · 0 in progress · 1 waiting to retry"));
    assert!(body.contains("Oldest waiting for a worker: <b>5 min</b>"));
    assert!(body.contains(">18 min ago</time>"), "last finished: {body}");
    assert!(body.contains(">20 min ago</time>"), "last started");
    assert!(
        body.contains("<dd>in 39 min</dd>") || body.contains("<dd>in 40 min</dd>"),
        "next due: {body}"
    );

    // The local folder source spends no GitHub budget.
    let local = fixture_with(Options {
        api_token: None,
        github_web_url: None,
    })
    .await;
    let api = file(&[project("checkout-api", "team-payments", "payments")]);
    Seed::new(&local.pool)
        .repo(1, "local", "tool")
        .await
        .synced(SHA, &api)
        .await;
    let body = get(&local.app, "/").await.body;
    assert!(body.contains("not applicable"), "{body}");
    assert!(!body.contains("github.com"), "no links without a website");
    assert!(body.contains(">0123456<"));
    assert!(body.contains("Read-only"));
}

#[tokio::test]
async fn repo_page_should_show_entries_timeline_deliveries_and_links() {
    let f = fixture().await;
    seed(&f.pool).await;
    record(
        &f.pool,
        &NewDelivery {
            id: "d-1",
            event: "push",
            action: None,
            repo: Some("acme/api"),
            outcome: "queued",
        },
    )
    .await
    .expect("delivery");

    let page = get(&f.app, "/repos/acme/api").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    assert!(body.contains("<span class=\"badge status-synced\">"));
    assert!(body.contains("href=\"https://github.com/acme/api/blob/main/project.yaml\""));
    assert!(body.contains(&format!(
        "href=\"https://github.com/acme/api/commit/{SHA}\""
    )));
    // Every field of an entry.
    for expected in [
        "id=\"entry-checkout-api\"",
        "href=\"/projects?owner=team-payments\"",
        "Takes payments at checkout",
        "production",
        "href=\"/projects?tag=grpc\"",
        "href=\"https://runbooks.example.com/checkout\"",
        "<b>cluster</b>=eu-west-1",
        "<b>tier</b>=1",
    ] {
        assert!(body.contains(expected), "{expected}: {body}");
    }
    // The timeline and the deliveries naming this repository; an event
    // that happened once carries no count.
    assert!(body.contains("applied 2 entries"));
    assert!(!body.contains("class=\"repeat\""), "{body}");
    assert!(body.contains("<code>push</code>"));
    assert!(body.contains("href=\"/deliveries?repo=acme%2Fapi\""));

    let missing = get(&f.app, "/repos/acme/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing
        .header(header::CONTENT_TYPE)
        .starts_with("text/html"));
    assert!(missing.body.contains("repository acme/nope not found"));
}

#[tokio::test]
async fn repo_page_should_explain_invalid_error_and_conflict() {
    let f = fixture().await;
    seed(&f.pool).await;
    Seed::new(&f.pool)
        .retrying(3, 3, "GitHub answered 502", Duration::from_secs(150))
        .await;

    let invalid = get(&f.app, "/repos/acme/web").await.body;
    assert!(invalid.contains(
        "<pre>project.yaml:4:8: owner: must not be empty\nproject.yaml:9:3: tags[0]: not a name</pre>"
    ));
    assert!(invalid.contains("kept as they were"));

    let error = get(&f.app, "/repos/acme/pay").await.body;
    assert!(error.contains("GitHub answered 502 Bad Gateway\nwhile reading project.yaml"));
    // The same failure 53 times in a row is one event of the timeline.
    assert!(
        error.contains("<span class=\"repeat\" title=\"53 reconciles in a row, the latest at this time\">×53</span> <span class=\"message\"><span class=\"line\">GitHub answered 502</span></span>"),
        "{error}"
    );
    assert!(error.contains("Next retry in 2 min (at "), "{error}");
    assert!(error.contains("after 3 failed attempts."));

    let conflict = get(&f.app, "/repos/acme/shop").await.body;
    assert!(
        conflict.contains(
            "<code>checkout-api</code> is owned by <a href=\"/repos/acme/api\">acme/api</a>"
        ),
        "{conflict}"
    );
}

#[tokio::test]
async fn pages_should_render_repository_data_as_text() {
    let f = fixture().await;
    // Entries the file's rules refuse (`javascript:` and `data:` links), as
    // an older server or a hand edit could have left them.
    let evil = Project {
        name: ProjectName::parse("evil").expect("a name"),
        fields: Fields {
            owner: "<b>team</b>".to_owned(),
            description: Some("<script>alert(1)</script>".to_owned()),
            lifecycle: None,
            tags: Vec::new(),
            links: vec![
                link(
                    "<b>Runbook</b><script>alert(2)</script>",
                    "https://example.com/r",
                ),
                link("Trap", "javascript:alert(3)"),
                link("Data", "data:text/html,<script>alert(4)</script>"),
            ],
            labels: BTreeMap::from([("<k>".to_owned(), "<v>".to_owned())]),
            // The table's checks refuse a system that is not name-like;
            // a dependency's name is only checked by the file's rules.
            depends_on: vec!["<script>alert(5)</script>".to_owned()],
            system: None,
        },
    };
    Seed::new(&f.pool)
        .repo(9, "local", "x\"><img src=x>")
        .await
        .unchecked_entries("abc", &[evil])
        .await
        .invalid("<i>bad</i>")
        .await;

    for uri in ["/", "/repos/local/x%22%3E%3Cimg%20src%3Dx%3E", "/projects"] {
        let page = get(&f.app, uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.body);
        let body = &page.body;
        assert!(!body.contains("<script>"), "{uri}: {body}");
        assert!(!body.contains("<img"), "{uri}");
        assert!(!body.contains("<b>team"), "{uri}");
        assert!(!body.contains("<i>bad"), "{uri}");
        assert!(!body.contains("href=\"javascript:"), "{uri}");
        assert!(!body.contains("href=\"data:"), "{uri}");
    }
    let detail = get(&f.app, "/repos/local/x%22%3E%3Cimg%20src%3Dx%3E")
        .await
        .body;
    assert!(
        detail.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "{detail}"
    );
    assert!(detail.contains(
        "<a href=\"https://example.com/r\" rel=\"noopener noreferrer nofollow\">\
         &#60;b&#62;Runbook&#60;/b&#62;&#60;script&#62;alert(2)&#60;/script&#62;</a>"
    ));
    assert!(detail.contains("Trap <span class=\"muted\">(javascript:alert(3))</span>"));
    assert!(detail.contains("<b>&#60;k&#62;</b>=&#60;v&#62;"));
    assert!(detail.contains("&#60;script&#62;alert(5)&#60;/script&#62;"));
}

#[tokio::test]
async fn pages_should_send_security_headers_and_no_inline_script() {
    let f = fixture().await;
    seed(&f.pool).await;
    for uri in [
        "/",
        "/repos/acme/api",
        "/projects",
        "/deliveries",
        "/signin",
    ] {
        let page = get(&f.app, uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}");
        let csp = page.header(header::CONTENT_SECURITY_POLICY);
        assert!(csp.contains("script-src 'self'"), "{uri}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{uri}: {csp}");
        assert_eq!(page.header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert!(!page.header(header::REFERRER_POLICY).is_empty());
        // The only script is the file the binary serves.
        assert_eq!(page.body.matches("<script").count(), 1, "{uri}");
        assert!(page
            .body
            .contains("<script src=\"/static/refresh.js\" defer></script>"));
        assert!(!page.body.contains(" style=\""), "{uri}: inline style");
        assert!(
            !has_event_handler(&page.body),
            "{uri}: event handler attribute"
        );
    }
    let script = get(&f.app, "/static/refresh.js").await;
    assert_eq!(script.status, StatusCode::OK);
    assert!(script
        .header(header::CONTENT_TYPE)
        .starts_with("text/javascript"));
    assert!(script.body.contains("data-live"));
    // The regions the script refreshes are on the pages.
    assert!(get(&f.app, "/")
        .await
        .body
        .contains("id=\"live-table\" data-live"));
}

#[tokio::test]
async fn projects_page_should_filter_by_owner_tag_and_search() {
    let f = fixture().await;
    seed(&f.pool).await;

    let all = get(&f.app, "/projects").await.body;
    for name in ["checkout-api", "checkout-worker", "web-front"] {
        assert!(all.contains(&format!(">{name}</a>")), "{name}");
    }
    assert!(all.contains("href=\"/projects/checkout-api\""));

    let by_owner = get(&f.app, "/projects?owner=team-web").await.body;
    assert!(by_owner.contains(">web-front</a>"));
    assert!(!by_owner.contains(">checkout-api</a>"));
    assert!(by_owner.contains("value=\"team-web\""));

    let by_tag = get(&f.app, "/projects?tag=grpc").await.body;
    assert!(by_tag.contains(">checkout-api</a>"));
    assert!(!by_tag.contains(">checkout-worker</a>"));

    let searched = get(&f.app, "/projects?q=WORKER").await.body;
    assert!(searched.contains(">checkout-worker</a>"));
    assert!(!searched.contains(">checkout-api</a>"));

    let none = get(&f.app, "/projects?owner=nobody").await.body;
    assert!(none.contains("No project matches."));
}

#[tokio::test]
async fn deliveries_page_should_list_event_action_repo_outcome_and_time() {
    let f = fixture().await;
    seed(&f.pool).await;
    for (id, event, action, repo, outcome) in [
        ("d-1", "push", None, Some("acme/api"), "queued"),
        (
            "d-2",
            "repository",
            Some("renamed"),
            Some("acme/web"),
            "queued",
        ),
        ("d-3", "check_suite", Some("requested"), None, "ignored"),
    ] {
        let delivery = NewDelivery {
            id,
            event,
            action,
            repo,
            outcome,
        };
        record(&f.pool, &delivery).await.expect("delivery");
    }

    let body = get(&f.app, "/deliveries").await.body;
    assert!(body.contains("<code>repository.renamed</code>"), "{body}");
    assert!(body.contains("<a href=\"/repos/acme/web\">acme/web</a>"));
    assert!(body.contains("outcome-ignored"));
    assert!(body.contains(">d-3<"));
    assert!(body.contains("just now</time>"));

    let one = get(&f.app, "/deliveries?repo=acme/api").await.body;
    assert!(one.contains(">d-1<"));
    assert!(!one.contains(">d-2<"));
}

#[tokio::test]
async fn sign_in_should_set_a_strict_http_only_cookie_only_for_the_right_token() {
    let f = fixture().await;

    let form = get(&f.app, "/signin").await;
    assert_eq!(form.status, StatusCode::OK);
    assert!(form.body.contains("type=\"password\" name=\"token\""));

    let wrong = post_form(&f.app, "/signin", "token=nope", None, Some(ORIGIN)).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());
    assert!(wrong.body.contains("That is not the API token."));

    let cross_site = post_form(
        &f.app,
        "/signin",
        &format!("token={TOKEN}"),
        None,
        Some("https://evil.example"),
    )
    .await;
    assert_eq!(cross_site.status, StatusCode::FORBIDDEN);
    assert!(cross_site.headers.get(header::SET_COOKIE).is_none());

    let right = post_form(
        &f.app,
        "/signin",
        &format!("token={TOKEN}&next=%2Frepos%2Facme%2Fapi"),
        None,
        Some(ORIGIN),
    )
    .await;
    assert_eq!(right.status, StatusCode::SEE_OTHER);
    assert_eq!(
        right.header(header::LOCATION),
        "/repos/acme/api?done=signed-in"
    );
    let set = right.header(header::SET_COOKIE);
    for attribute in [
        "roster_session=v1.",
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=43200",
    ] {
        assert!(set.contains(attribute), "{attribute}: {set}");
    }
    assert!(!set.contains(TOKEN), "the cookie never holds the token");

    // An open redirect is refused: `next` must be a local path.
    let offsite = post_form(
        &f.app,
        "/signin",
        &format!("token={TOKEN}&next=https%3A%2F%2Fevil.example%2F"),
        None,
        Some(ORIGIN),
    )
    .await;
    assert_eq!(offsite.header(header::LOCATION), "/?done=signed-in");
}

/// A sign-in form post from `client`, as the server sees it over TCP.
async fn sign_in_from(app: &Router, client: [u8; 4], token: &str) -> Answer {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/signin")
        .header(header::HOST, HOST)
        .header(header::ORIGIN, ORIGIN)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .extension(ClientAddr(IpAddr::from(client)))
        .body(Body::from(format!("token={token}")))
        .expect("request");
    send(app, request).await
}

#[tokio::test]
async fn sign_in_should_lock_an_address_out_after_ten_wrong_tokens() {
    let f = fixture().await;
    seed(&f.pool).await;
    let before = sqlx::query_scalar::<_, i64>("select count(*) from entries")
        .fetch_one(&f.pool)
        .await
        .expect("entries");
    let guesser = [192, 0, 2, 1];

    for attempt in 1..=10 {
        let wrong = sign_in_from(&f.app, guesser, &format!("guess-{attempt}")).await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "try {attempt}");
    }
    let locked = sign_in_from(&f.app, guesser, "guess-11").await;
    assert_eq!(locked.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = locked
        .header(header::RETRY_AFTER)
        .parse()
        .unwrap_or_else(|e| panic!("Retry-After ({e}): {:?}", locked.headers));
    assert!((1..=300).contains(&wait), "{wait}");
    assert!(
        locked.body.contains("Too many wrong tokens"),
        "{}",
        locked.body
    );

    // Locked means locked: even the right token waits for the window.
    let right_but_locked = sign_in_from(&f.app, guesser, TOKEN).await;
    assert_eq!(right_but_locked.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(right_but_locked.headers.get(header::SET_COOKIE).is_none());

    // Another address is not affected.
    let other = sign_in_from(&f.app, [192, 0, 2, 2], TOKEN).await;
    assert_eq!(other.status, StatusCode::SEE_OTHER, "{}", other.body);

    let after = sqlx::query_scalar::<_, i64>("select count(*) from entries")
        .fetch_one(&f.pool)
        .await
        .expect("entries");
    assert_eq!(after, before, "refused sign-ins change nothing");
}

#[tokio::test]
async fn the_server_should_key_sign_in_tries_by_the_connection_address() {
    let f = fixture().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, f.app.clone(), async move {
        let _ = stop_rx.await;
    }));
    // Loopback answers on all of 127/8: two source addresses, two clients.
    let post = |from: [u8; 4], token: &'static str| async move {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(IpAddr::from(from)));
        let client = Client::builder(TokioExecutor::new()).build::<_, Body>(connector);
        let request = Request::builder()
            .method(Method::POST)
            .uri(format!("http://127.0.0.1:{port}/signin"))
            .header(header::ORIGIN, format!("http://127.0.0.1:{port}"))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={token}")))
            .expect("request");
        client.request(request).await.expect("answer").status()
    };
    for _ in 0..10 {
        assert_eq!(
            post([127, 0, 0, 1], "wrong").await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        post([127, 0, 0, 1], "wrong").await,
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        post([127, 0, 0, 2], "wrong").await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(post([127, 0, 0, 2], TOKEN).await, StatusCode::SEE_OTHER);
    let _ = stop_tx.send(());
    server.await.expect("the server stops");
}

#[tokio::test]
async fn signed_in_pages_should_offer_resync_and_sign_out() {
    let f = fixture().await;
    seed(&f.pool).await;
    let cookie = sign_in(&f.app).await;

    let overview = get_as(&f.app, "/?done=signed-in", Some(&cookie)).await.body;
    assert!(overview.contains("Resync all"), "{overview}");
    assert!(overview.contains("Signed in."));
    assert!(overview.contains("Sign out"));
    let repo = get_as(&f.app, "/repos/acme/api", Some(&cookie)).await.body;
    assert!(repo.contains("action=\"/repos/acme/api/resync\""));

    // A forged or stale cookie is just a reader.
    let forged = get_as(&f.app, "/", Some("roster_session=v1.99999999999.00.00")).await;
    assert!(!forged.body.contains("Resync all"));

    let csrf = csrf_of(&overview);
    let out = post_form(
        &f.app,
        "/signout",
        &format!("csrf={csrf}"),
        Some(&cookie),
        Some(ORIGIN),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(out.header(header::SET_COOKIE).contains("Max-Age=0"));
}

async fn listing_requested(pool: &PgPool) -> bool {
    sqlx::query_scalar("select requested from listing_schedule")
        .fetch_one(pool)
        .await
        .expect("schedule")
}

#[tokio::test]
async fn resync_forms_should_refuse_cross_site_and_token_less_requests() {
    let f = fixture().await;
    seed(&f.pool).await;
    let cookie = sign_in(&f.app).await;
    let csrf = csrf_of(&get_as(&f.app, "/", Some(&cookie)).await.body);
    let good = format!("csrf={csrf}");

    let refusals = [
        // Not signed in.
        (None, Some(ORIGIN), good.as_str(), StatusCode::UNAUTHORIZED),
        // Another site's page, or no origin at all.
        (
            Some(cookie.as_str()),
            Some("https://evil.example"),
            good.as_str(),
            StatusCode::FORBIDDEN,
        ),
        (
            Some(cookie.as_str()),
            None,
            good.as_str(),
            StatusCode::FORBIDDEN,
        ),
        // Same site, but not this session's form.
        (
            Some(cookie.as_str()),
            Some(ORIGIN),
            "csrf=0000",
            StatusCode::FORBIDDEN,
        ),
        (
            Some(cookie.as_str()),
            Some(ORIGIN),
            "",
            StatusCode::FORBIDDEN,
        ),
    ];
    for (cookie, origin, body, expected) in refusals {
        let answer = post_form(&f.app, "/resync", body, cookie, origin).await;
        assert_eq!(answer.status, expected, "{cookie:?} {origin:?} {body}");
        let repo = post_form(&f.app, "/repos/acme/api/resync", body, cookie, origin).await;
        assert_eq!(repo.status, expected, "{cookie:?} {origin:?} {body}");
    }
    assert!(!listing_requested(&f.pool).await);
    assert_eq!(f.queue.depth().await.expect("depth"), 0);

    // Another session's token does not work with this cookie either.
    let other = sign_in(&f.app).await;
    let other_csrf = csrf_of(&get_as(&f.app, "/", Some(&other)).await.body);
    assert_ne!(other_csrf, csrf);
    let crossed = post_form(
        &f.app,
        "/resync",
        &format!("csrf={other_csrf}"),
        Some(&cookie),
        Some(ORIGIN),
    )
    .await;
    assert_eq!(crossed.status, StatusCode::FORBIDDEN);
    assert!(!listing_requested(&f.pool).await);
}

#[tokio::test]
async fn resync_forms_should_enqueue_the_repo_and_request_a_listing() {
    let f = fixture().await;
    seed(&f.pool).await;
    let cookie = sign_in(&f.app).await;
    let page = get_as(&f.app, "/repos/acme/pay", Some(&cookie)).await.body;
    let body = format!("csrf={}", csrf_of(&page));

    let repo = post_form(
        &f.app,
        "/repos/acme/pay/resync",
        &body,
        Some(&cookie),
        Some(ORIGIN),
    )
    .await;
    assert_eq!(repo.status, StatusCode::SEE_OTHER, "{}", repo.body);
    assert_eq!(repo.header(header::LOCATION), "/repos/acme/pay?done=resync");
    let queued = f.queue.status(&RepoId(3)).await.expect("queue status");
    assert!(queued.is_some(), "acme/pay is in the queue");
    let after = get_as(&f.app, "/repos/acme/pay?done=resync", Some(&cookie)).await;
    assert!(after.body.contains("Resync queued"));

    let unknown = post_form(
        &f.app,
        "/repos/acme/nope/resync",
        &body,
        Some(&cookie),
        Some(ORIGIN),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);

    let all = post_form(&f.app, "/resync", &body, Some(&cookie), Some(ORIGIN)).await;
    assert_eq!(all.status, StatusCode::SEE_OTHER);
    assert_eq!(all.header(header::LOCATION), "/?done=resync-all");
    assert!(listing_requested(&f.pool).await);
    let overview = get_as(&f.app, "/", Some(&cookie)).await.body;
    assert!(overview.contains("requested, starts within seconds"));
}

#[tokio::test]
async fn dashboard_should_be_read_only_without_a_configured_token() {
    let f = fixture_with(Options {
        api_token: None,
        github_web_url: Some("https://github.com"),
    })
    .await;
    seed(&f.pool).await;

    let signin = get(&f.app, "/signin").await;
    assert_eq!(signin.status, StatusCode::FORBIDDEN);
    assert!(signin.body.contains("Signing in is off"));
    assert!(!signin.body.contains("name=\"token\""));
    let attempt = post_form(&f.app, "/signin", "token=anything", None, Some(ORIGIN)).await;
    assert_eq!(attempt.status, StatusCode::FORBIDDEN);
    assert!(attempt.headers.get(header::SET_COOKIE).is_none());
    let resync = post_form(&f.app, "/resync", "csrf=x", None, Some(ORIGIN)).await;
    assert_eq!(resync.status, StatusCode::UNAUTHORIZED);
    assert!(!listing_requested(&f.pool).await);
}

#[tokio::test]
async fn an_invalid_files_problems_should_show_once_not_again_in_the_timeline() {
    let f = fixture().await;
    seed(&f.pool).await;
    let page = get(&f.app, "/repos/acme/web").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    assert_eq!(
        body.matches("project.yaml:9:3: tags[0]: not a name")
            .count(),
        1,
        "the second problem shows once, in the error block: {body}"
    );
    let timeline = body
        .split("<ol class=\"timeline\">")
        .nth(1)
        .and_then(|t| t.split("</ol>").next())
        .unwrap_or_default();
    assert!(
        timeline.contains("project.yaml:4:8: owner: must not be empty (and 1 more, in full above)"),
        "{timeline}"
    );
}
