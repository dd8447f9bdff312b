//! Dependencies checked by the reconcile (docs/contract.md#relations):
//! under `ROSTER_RELATIONS=require` a dependency on no project makes the
//! file `invalid` with the nearest names and keeps its entries; under
//! `warn` it is applied and counted in `warnings`, resolved by name
//! whenever it is read, so it resolves as soon as its target is applied,
//! without a read of the dependent; hostile dependencies (cycles, long
//! chains, fifty unknown names) get a clear answer and never a loop.

use crate::checks::{env as checks_env, Env, ACME, FILE};
use crate::support::registry::handler;

use roster::project::relations::RelationsMode;
use roster::registry::get_repo;

/// The checks env's handler under `mode`.
fn relations(env: &mut Env, mode: RelationsMode) {
    env.handler = handler(&env.pool, env.queue.clone()).with_relations(mode);
}

/// Status, error, warnings and each entry's `depends_on` of `acme/{name}`.
async fn state(env: &Env, name: &str) -> (String, Option<String>, i64, Vec<(String, Vec<String>)>) {
    let detail = get_repo(&env.pool, "acme", name)
        .await
        .expect("read")
        .expect("known");
    let entries = detail
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.fields.depends_on.clone()))
        .collect();
    (
        detail.repo.status.as_str().to_owned(),
        detail.repo.error.clone(),
        detail.repo.warnings,
        entries,
    )
}

/// Pushes `text` to `acme/{repo}`'s project file and reconciles it.
async fn push(env: &Env, id: i64, text: &str) -> &'static str {
    env.fake.push_file(id, FILE, text.as_bytes());
    env.reconcile(id).await
}

#[tokio::test]
async fn under_require_an_unknown_dependency_should_be_invalid_naming_the_nearest_and_keep_entries()
{
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    env.repo("checkout", "name: checkout-api\nowner: t\n").await;
    env.repo("stock", "name: stock-api\nowner: t\n").await;
    let cart = env
        .repo(
            "cart",
            "name: cart-api\nowner: t\ndepends_on: [stock-api]\n",
        )
        .await;
    let before = state(&env, "cart").await;
    assert_eq!(before.0, "synced");

    let outcome = push(
        &env,
        cart,
        "name: cart-api\nowner: t\ndepends_on: [stock-api, chekout-api]\n",
    )
    .await;
    assert_eq!(outcome, "invalid");
    let after = state(&env, "cart").await;
    assert_eq!(after.0, "invalid");
    assert_eq!(
        after.1.as_deref(),
        Some("project.yaml:3:25: depends_on[1]: no project \"chekout-api\" (did you mean checkout-api?)")
    );
    assert_eq!(after.3, before.3, "the entries are kept as they were");

    // Fixed, it applies.
    let fixed = "name: cart-api\nowner: t\ndepends_on: [stock-api, checkout-api]\n";
    assert_eq!(push(&env, cart, fixed).await, "synced");
    assert_eq!(
        state(&env, "cart").await.3,
        [(
            "cart-api".to_owned(),
            vec!["stock-api".to_owned(), "checkout-api".to_owned()]
        )]
    );
}

#[tokio::test]
async fn a_dependency_on_a_project_of_the_same_file_or_repository_should_resolve_within_it() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    // Neither name exists before the file is applied: they resolve
    // within it, cycle and all.
    let id = env
        .repo(
            "shop",
            "projects:\n  - name: shop-web\n    owner: t\n    depends_on: [shop-api]\n  - name: shop-api\n    owner: t\n    depends_on: [shop-web]\n",
        )
        .await;
    let (status, error, warnings, _) = state(&env, "shop").await;
    assert_eq!((status.as_str(), error, warnings), ("synced", None, 0));
    // A project the same file stops declaring is not there to depend on.
    let outcome = push(
        &env,
        id,
        "projects:\n  - name: shop-web\n    owner: t\n    depends_on: [shop-api]\n",
    )
    .await;
    assert_eq!(outcome, "invalid");
    assert_eq!(
        state(&env, "shop").await.1.as_deref(),
        Some("project.yaml:4:18: projects[0].depends_on[0]: no project \"shop-api\"")
    );
}

#[tokio::test]
async fn under_warn_a_dependency_should_resolve_when_its_target_is_applied_without_reading_the_dependent(
) {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Warn);
    env.repo(
        "cart",
        "name: cart-api\nowner: t\ndepends_on: [checkout-api]\n",
    )
    .await;
    let (status, _, warnings, entries) = state(&env, "cart").await;
    assert_eq!(
        (status.as_str(), warnings),
        ("synced", 1),
        "applied, flagged"
    );
    assert_eq!(entries[0].1, ["checkout-api"]);

    // What one reconcile of a repository costs, with no dependents.
    env.fake.reset_counts();
    env.repo("other", "name: other-api\nowner: t\n").await;
    let one_repository = env.fake.total();
    assert!(one_repository > 0);

    env.fake.reset_counts();
    env.repo("checkout", "name: checkout-api\nowner: t\n").await;
    assert_eq!(
        env.fake.total(),
        one_repository,
        "the target's reconcile reads only the target"
    );
    let queued: i64 = sqlx::query_scalar("select count(*) from queue")
        .fetch_one(&env.pool)
        .await
        .expect("queue");
    assert_eq!(queued, 0, "nothing enqueued for the dependent");
    let (status, _, warnings, _) = state(&env, "cart").await;
    assert_eq!(
        (status.as_str(), warnings),
        ("synced", 0),
        "resolved as read"
    );

    // Off: stored as written, never checked.
    relations(&mut env, RelationsMode::Off);
    let id = env.fake.add_repo_with_file(
        ACME,
        "loose",
        FILE,
        "name: loose\nowner: t\ndepends_on: [nobody]\n",
    );
    assert_eq!(env.reconcile(id).await, "synced");
}

#[tokio::test]
async fn cycles_and_long_chains_should_be_accepted_without_looping() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    // A → B → A across two repositories: the first waits for nothing
    // under warn; under require, the second closes the cycle.
    relations(&mut env, RelationsMode::Warn);
    env.repo("a", "name: a\nowner: t\ndepends_on: [b]\n").await;
    relations(&mut env, RelationsMode::Require);
    env.repo("b", "name: b\nowner: t\ndepends_on: [a]\n").await;
    assert_eq!(state(&env, "b").await.0, "synced");
    assert_eq!(state(&env, "a").await.2, 0, "a's dependency resolves now");

    // A chain of 100 projects in one file, its last depending on its first.
    let mut text = String::from("projects:\n");
    for i in 0..100 {
        text.push_str(&format!(
            "  - name: p{i}\n    owner: t\n    depends_on: [p{}]\n",
            (i + 1) % 100
        ));
    }
    env.repo("chain", &text).await;
    let (status, error, warnings, entries) = state(&env, "chain").await;
    assert_eq!((status.as_str(), error, warnings), ("synced", None, 0));
    assert_eq!(entries.len(), 100);
}

#[tokio::test]
async fn fifty_unknown_dependencies_should_get_one_clear_bounded_answer() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    let long = "x".repeat(60);
    let names: Vec<String> = (0..50).map(|i| format!("{long}{i:02}")).collect();
    let text = format!("name: a\nowner: t\ndepends_on: [{}]\n", names.join(", "));
    let id = env.fake.add_repo_with_file(ACME, "hostile", FILE, &text);
    assert_eq!(env.reconcile(id).await, "invalid");
    let (_, error, _, entries) = state(&env, "hostile").await;
    let error = error.unwrap_or_default();
    assert_eq!(error.lines().count(), 50, "{error}");
    assert!(
        error.lines().all(|l| l.contains(": no project \"xxx")),
        "{error}"
    );
    assert!(error.len() < 16 * 1024, "{} bytes", error.len());
    assert!(entries.is_empty(), "nothing applied");

    // Warned instead, it applies, and counts once per entry.
    relations(&mut env, RelationsMode::Warn);
    assert_eq!(env.reconcile(id).await, "synced");
    let (_, _, warnings, entries) = state(&env, "hostile").await;
    assert_eq!((warnings, entries[0].1.len()), (1, 50));
}

/// The newest change of `name` in the log: its kind, its dependents and
/// how many there were.
async fn newest_change(env: &Env, name: &str) -> (String, Option<Vec<String>>, Option<usize>) {
    let history = roster::registry::changes::history(&env.pool, name, None, 1)
        .await
        .expect("history");
    let change = history.items.into_iter().next().expect("a change");
    let json = roster::web::json::ChangeJson::from(change);
    (json.kind.to_owned(), json.dependents, json.dependents_total)
}

#[tokio::test]
async fn a_removal_or_rename_should_log_its_dependents_and_leave_them_synced() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    let checkout = env.repo("checkout", "name: checkout-api\nowner: t\n").await;
    for name in ["returns-worker", "cart-api", "orders-api"] {
        let text = format!("name: {name}\nowner: t\ndepends_on: [checkout-api]\n");
        env.repo(name, &text).await;
    }
    // Renamed: the old name's removal names who depended on it.
    assert_eq!(
        push(&env, checkout, "name: checkout-svc\nowner: t\n").await,
        "synced"
    );
    let names = ["cart-api", "orders-api", "returns-worker"].map(String::from);
    assert_eq!(
        newest_change(&env, "checkout-api").await,
        ("removed".to_owned(), Some(names.to_vec()), Some(3))
    );
    // A creation carries none.
    assert_eq!(newest_change(&env, "checkout-svc").await.1, None);
    for name in ["returns-worker", "cart-api", "orders-api"] {
        let (status, error, warnings, _) = state(&env, name).await;
        assert_eq!(
            (status.as_str(), error, warnings),
            ("synced", None, 1),
            "{name} stays synced, its dependency unknown"
        );
    }
    let queued: i64 = sqlx::query_scalar("select count(*) from queue")
        .fetch_one(&env.pool)
        .await
        .expect("queue");
    assert_eq!(queued, 0, "no dependent is read again");

    // Back, then removed with the file: the same, and none left behind.
    assert_eq!(
        push(&env, checkout, "name: checkout-api\nowner: t\n").await,
        "synced"
    );
    env.fake.delete_file(checkout, FILE);
    assert_eq!(env.reconcile(checkout).await, "no_file");
    assert_eq!(newest_change(&env, "checkout-api").await.2, Some(3));
    assert_eq!(state(&env, "cart-api").await.0, "synced");
}

#[tokio::test]
async fn a_removal_should_log_at_most_a_thousand_dependents_then_count_them() {
    let env = checks_env().await;
    let target = env.repo("target", "name: target\nowner: t\n").await;
    let bulk = env.repo("bulk", "name: bulk\nowner: t\n").await;
    // More dependents than a file may declare: written as a thousand
    // reconciles would have.
    sqlx::query(
        "insert into entries (name, repo_id, source_sha, path, owner, depends_on)
         select 'dep-' || lpad(i::text, 4, '0'), $1, 'x', 'project.yaml', 't', array['target']
         from generate_series(1, 1005) as i",
    )
    .bind(bulk)
    .execute(&env.pool)
    .await
    .expect("dependents");
    env.fake.delete_file(target, FILE);
    assert_eq!(env.reconcile(target).await, "no_file");
    let (kind, names, total) = newest_change(&env, "target").await;
    assert_eq!((kind.as_str(), total), ("removed", Some(1005)));
    let names = names.unwrap_or_default();
    assert_eq!(names.len(), 1000);
    assert_eq!(
        (names[0].as_str(), names[999].as_str()),
        ("dep-0001", "dep-1000")
    );
}

#[tokio::test]
async fn hostile_dependency_names_should_be_refused_clearly_and_change_nothing() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    env.repo("db", "name: shop-db\nowner: t\n").await;
    let id = env
        .repo(
            "shop",
            "name: shop\nowner: t\ndepends_on: [shop-db]\nsystem: shop\n",
        )
        .await;
    let before = state(&env, "shop").await;
    let too_long = "a".repeat(64);
    let text = format!(
        "name: shop\nowner: t\ndepends_on:\n  - \"x'; drop table entries; --\"\n  - \"%\"\n  - \"\\u202Eevil\"\n  - {too_long}\n  - {{name: x}}\n  - shop\n"
    );
    assert_eq!(push(&env, id, &text).await, "invalid");
    let after = state(&env, "shop").await;
    let error = after.1.clone().unwrap_or_default();
    let fields: Vec<&str> = error
        .lines()
        .map(|l| l.split(": ").nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        fields,
        [
            "depends_on[0]",
            "depends_on[1]",
            "depends_on[2]",
            "depends_on[3]",
            "depends_on[4]",
            "depends_on[5]"
        ],
        "{error}"
    );
    assert!(error.contains("cannot depend on itself"), "{error}");
    assert_eq!(after.3, before.3, "the entry is kept as it was");
    let entries: i64 = sqlx::query_scalar("select count(*) from entries")
        .fetch_one(&env.pool)
        .await
        .expect("entries");
    assert_eq!(entries, 2, "nothing else was written");
}

#[tokio::test]
async fn under_require_a_file_invalid_for_want_of_a_project_should_be_read_again_once_it_exists() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    let cart = env
        .repo(
            "cart",
            "name: cart-api\nowner: t\ndepends_on: [checkout-api]\n",
        )
        .await;
    assert_eq!(state(&env, "cart").await.0, "invalid");
    let unrelated = env.repo("other", "name: other-api\nowner: t\n").await;
    let queued = || async {
        sqlx::query_scalar::<_, i64>("select repo_id from queue order by repo_id")
            .fetch_all(&env.pool)
            .await
            .expect("queue")
    };
    assert!(
        queued().await.is_empty(),
        "a project no file wants wakes nobody"
    );
    let _ = unrelated;

    env.repo("checkout", "name: checkout-api\nowner: t\n").await;
    assert_eq!(queued().await, [cart], "the dependent is read again");
    assert_eq!(env.reconcile(cart).await, "synced");
}

/// `warnings` of `acme/{name}` in the repository API and in its list, and
/// the overview's mark, through the router with `ROSTER_RELATIONS=mode`.
async fn warnings_shown(env: &Env, name: &str, mode: RelationsMode) -> (i64, i64, bool) {
    use crate::support::router::{app_on, send, Options};
    let options = Options {
        api_token: None,
        github_web_url: Some("https://github.com"),
    };
    let app = app_on(
        &env.pool,
        &env.queue,
        options,
        |_, _| {},
        |s| s.relations = mode,
    );
    let get = |path: String| {
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .expect("request");
        send(&app, request)
    };
    let detail: serde_json::Value =
        serde_json::from_str(&get(format!("/api/v1/repos/acme/{name}")).await.body).expect("json");
    let list: serde_json::Value =
        serde_json::from_str(&get(format!("/api/v1/repos?q=acme/{name}")).await.body)
            .expect("json");
    let overview = get(format!("/?q=acme/{name}")).await.body;
    // "to fix" links to the repository's entries, where the name is marked.
    let page = get(format!("/repos/acme/{name}")).await.body;
    let marked = page.contains("dep-unknown");
    let to_fix = overview.contains("#entries\" title=");
    assert_eq!(
        marked, to_fix,
        "the overview's mark and the page's agree:\n{page}"
    );
    (
        detail["warnings"].as_i64().expect("warnings"),
        list["items"][0]["warnings"].as_i64().expect("warnings"),
        overview.contains("to fix</a>"),
    )
}

#[tokio::test]
async fn under_off_an_unknown_dependency_should_not_count_as_a_warning() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Off);
    env.repo(
        "cart",
        "name: cart-api\nowner: team-cart\ndepends_on: [chekout-api]\n",
    )
    .await;
    let (status, error, _, _) = state(&env, "cart").await;
    assert_eq!((status.as_str(), error), ("synced", None));
    assert_eq!(
        warnings_shown(&env, "cart", RelationsMode::Off).await,
        (0, 0, false),
        "relations are not checked: nothing to fix"
    );
    // The same registry under `warn` counts it.
    assert_eq!(
        warnings_shown(&env, "cart", RelationsMode::Warn).await,
        (1, 1, true)
    );
}
