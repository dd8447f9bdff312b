//! The project page and the systems page (docs/contract.md#the-project-page):
//! fields, relations with their status, the picture of the neighbourhood
//! drawn by the server, the mark of a production project depending on a
//! deprecated one; every list of projects links to the page.

use axum::http::{header, StatusCode};

use crate::relations_api::{get, shop};

/// The names of the picture's nodes, in the order drawn.
fn drawn(page: &str) -> Vec<String> {
    let mut names: Vec<String> = page
        .split("data-node=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_project_page_should_show_its_relations_and_their_picture() {
    let f = shop().await;
    let page = get(&f.app, "/projects/cart-api").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    // Its fields, repository and file.
    assert!(
        body.contains("<a href=\"/repos/acme/shop\">acme/shop</a>"),
        "{body}"
    );
    assert!(body.contains("<code>project.yaml</code>"), "{body}");
    assert!(
        body.contains("<a href=\"/systems#system-shop\">shop</a>"),
        "{body}"
    );
    // Its dependencies with their status.
    assert!(body.contains(
        "<a href=\"/projects/checkout-api\">checkout-api</a> <span class=\"dep-status dep-resolved\">resolved</span>"
    ), "{body}");
    assert!(
        body.contains(
            "<span class=\"unknown-name\">stock-api</span> <span class=\"dep-status dep-unknown\""
        ),
        "{body}"
    );
    assert!(body.contains("No project depends on it."), "{body}");
    // The picture: two steps down, the unknown name dashed, no script.
    assert_eq!(
        drawn(body),
        ["cart-api", "checkout-api", "payments", "stock-api"]
    );
    assert!(
        body.contains("class=\"node lc-production root\" data-node=\"cart-api\""),
        "{body}"
    );
    assert!(
        body.contains("class=\"node lc-none unknown\" data-node=\"stock-api\""),
        "{body}"
    );
    assert!(body.contains("<path class=\"edge unknown\""), "{body}");
    assert!(
        !body.contains("<style") && !body.contains(" style="),
        "no inline style"
    );
    assert!(
        !body.contains("deprecated-mark"),
        "cart-api depends on no deprecated project"
    );
    let csp = page.header(header::CONTENT_SECURITY_POLICY);
    assert!(
        csp.contains("style-src 'self';") && !csp.contains("unsafe-inline"),
        "{csp}"
    );

    // The cycle checkout-api ⇄ payments is drawn, its dependents listed,
    // and payments being deprecated marks the production checkout-api.
    let checkout = get(&f.app, "/projects/checkout-api").await.body;
    assert!(checkout.contains(
        "<li><a href=\"/projects/cart-api\">cart-api</a> <span class=\"muted\">in <a href=\"/repos/acme/shop\">acme/shop</a>"
    ), "{checkout}");
    // (stock-api is what a dependent depends on: not its neighbourhood.)
    assert_eq!(drawn(&checkout), ["cart-api", "checkout-api", "payments"]);
    assert!(
        checkout.contains("class=\"panel warn deprecated-mark\""),
        "{checkout}"
    );
    assert!(
        checkout.contains("depends on <a href=\"/projects/payments\">payments</a>"),
        "{checkout}"
    );
    let payments = get(&f.app, "/projects/payments").await.body;
    assert!(
        !payments.contains("deprecated-mark"),
        "a deprecated project is not marked"
    );
}

#[tokio::test]
async fn a_missing_or_hostile_name_should_answer_a_404_page() {
    let f = shop().await;
    let long = "a".repeat(3000);
    // A name no project has is a 404; text that cannot be a name at all (a
    // control character, an over-long value) is refused as bad input.
    for (uri, status) in [
        (
            "/projects/no-such-project".to_owned(),
            StatusCode::NOT_FOUND,
        ),
        ("/projects/a%00b".to_owned(), StatusCode::BAD_REQUEST),
        ("/projects/%3Cscript%3E".to_owned(), StatusCode::NOT_FOUND),
        (format!("/projects/{long}"), StatusCode::BAD_REQUEST),
    ] {
        let page = get(&f.app, &uri).await;
        assert_eq!(page.status, status, "{uri}: {}", page.body);
        assert!(
            page.header(header::CONTENT_TYPE).starts_with("text/html"),
            "{uri}"
        );
        assert!(!page.body.contains("<script>"), "{uri}");
        assert!(
            page.body.len() < 20_000,
            "{uri}: the name is not echoed whole"
        );
    }
}

#[tokio::test]
async fn the_systems_page_and_the_lists_should_link_to_project_pages() {
    let f = shop().await;
    let systems = get(&f.app, "/systems").await;
    assert_eq!(systems.status, StatusCode::OK, "{}", systems.body);
    let body = &systems.body;
    let billing = body.find("id=\"system-billing\"").unwrap_or(usize::MAX);
    let shop = body.find("id=\"system-shop\"").unwrap_or(usize::MAX);
    assert!(billing < shop && shop < body.len(), "{body}");
    assert!(body[shop..].contains("<a class=\"chip\" href=\"/projects/cart-api\">cart-api</a>"));
    assert!(
        body[shop..].contains("shop-team</a> <span class=\"muted\">(2)</span>"),
        "{body}"
    );
    for (uri, link) in [
        (
            "/projects",
            "<a class=\"repo-name\" href=\"/projects/ledger\">ledger</a>",
        ),
        (
            "/repos/acme/pay",
            "<h3><a href=\"/projects/ledger\">ledger</a>",
        ),
        ("/", "<a href=\"/projects/ledger\">ledger</a>"),
        ("/changes", "<a href=\"/projects/ledger\">ledger</a>"),
        (
            "/projects/ledger/history",
            "<a href=\"/projects/ledger\">Current version</a>",
        ),
    ] {
        let page = get(&f.app, uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}");
        assert!(page.body.contains(link), "{link} on {uri}:\n{}", page.body);
    }
}
