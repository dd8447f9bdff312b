//! The relation lines of a pull request's `Roster` check run
//! (docs/contract.md#relations), end to end in process against the fake
//! GitHub: a removal or rename of a project others depend on, a new
//! dependency on no project, a production project on a deprecated one,
//! and what a public repository's check may name.

use crate::checks::{env as checks_env, Env, ACME, FILE};
use crate::support::pull_requests;
use crate::support::registry::handler;

use roster::project::relations::RelationsMode;

/// The checks (and the reconciles) of `env` under `mode`.
fn relations(env: &mut Env, mode: RelationsMode) {
    env.worker.relations = mode;
    env.handler = handler(&env.pool, env.queue.clone())
        .with_default_branch_checks(true)
        .with_relations(mode);
}

/// Records `repo` as public, as a public pull request's payload does.
async fn public(env: &Env, repo: i64) {
    sqlx::query("insert into repo_visibility (repo_id, public) values ($1, true)")
        .bind(repo)
        .execute(&env.pool)
        .await
        .expect("visibility");
}

/// `checkout-api` in `acme/checkout`, and three dependents in three
/// repositories; the id of `acme/checkout`.
async fn checkout_and_dependents(env: &Env) -> (i64, [i64; 3]) {
    let checkout = env.repo("checkout", "owner: t\nname: checkout-api\n").await;
    let mut dependents = [0; 3];
    for (k, name) in ["cart-api", "orders-api", "returns-worker"]
        .iter()
        .enumerate()
    {
        let text = format!("name: {name}\nowner: t\ndepends_on: [checkout-api]\n");
        dependents[k] = env.repo(name, &text).await;
    }
    (checkout, dependents)
}

#[tokio::test]
async fn a_rename_others_depend_on_should_be_warned_on_its_name_line() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Warn);
    let (checkout, _) = checkout_and_dependents(&env).await;
    env.quiet().await;
    let before = env.dump().await;
    let sha = env
        .fake
        .pr_commit(checkout, FILE, b"owner: t\nname: checkout-svc\n");
    env.open_pr(checkout, "checkout", 1, &sha).await;
    env.settle().await;
    let run = env.only_run(checkout, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    let notes: Vec<_> = run
        .annotations
        .iter()
        .filter(|a| a["message"].as_str().unwrap_or("").contains("depend"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", run.annotations);
    assert_eq!(notes[0]["annotation_level"], "warning");
    assert_eq!(notes[0]["start_line"], 2);
    assert_eq!(
        notes[0]["message"],
        "name: 3 projects depend on checkout-api: cart-api, orders-api, returns-worker"
    );
    assert!(run
        .summary
        .unwrap_or_default()
        .contains("ROSTER_RELATIONS=warn"));
    assert_eq!(env.dump().await, before, "a check changes nothing");
}

#[tokio::test]
async fn under_require_a_removal_others_depend_on_should_fail() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    let (checkout, _) = checkout_and_dependents(&env).await;
    env.quiet().await;
    // The file keeps one project and drops checkout-api.
    let sha = env
        .fake
        .pr_commit(checkout, FILE, b"name: checkout-web\nowner: t\n");
    env.open_pr(checkout, "checkout", 2, &sha).await;
    env.settle().await;
    let run = env.only_run(checkout, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("1 problem"));
    let note = &run.annotations[0];
    assert_eq!(note["annotation_level"], "failure");
    assert_eq!(note["start_line"], 1);
    assert_eq!(
        note["message"],
        "name: 3 projects depend on checkout-api: cart-api, orders-api, returns-worker"
    );
}

#[tokio::test]
async fn a_public_repositorys_check_should_name_only_public_dependents() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Warn);
    let (checkout, [cart, _, _]) = checkout_and_dependents(&env).await;
    public(&env, cart).await;
    env.quiet().await;
    let sha = env
        .fake
        .pr_commit(checkout, FILE, b"owner: t\nname: checkout-svc\n");
    let pr = pull_requests::Pr {
        repo: checkout,
        installation: ACME,
        owner: "acme",
        name: "checkout",
        number: 3,
        sha: &sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr);
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.settle().await;
    let run = env.only_run(checkout, &sha);
    let note = run
        .annotations
        .iter()
        .find(|a| a["message"].as_str().unwrap_or("").contains("depend"))
        .expect("a note");
    assert_eq!(
        note["message"],
        "name: 3 projects depend on checkout-api: cart-api and 2 projects in other repositories"
    );
    let summary = run.summary.unwrap_or_default();
    assert!(!summary.contains("orders-api"), "{summary}");
    assert!(!summary.contains("returns-worker"), "{summary}");
}

#[tokio::test]
async fn a_new_dependency_on_no_project_should_be_noted_on_its_line_with_the_nearest_names() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Warn);
    env.repo("checkout", "name: checkout-api\nowner: t\n").await;
    let cart = env.repo("cart", "name: cart-api\nowner: t\n").await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        cart,
        FILE,
        b"name: cart-api\nowner: t\ndepends_on:\n  - checkout-api\n  - chekout-api\n",
    );
    env.open_pr(cart, "cart", 4, &sha).await;
    env.settle().await;
    let run = env.only_run(cart, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let note = &run.annotations[0];
    assert_eq!(note["annotation_level"], "warning");
    assert_eq!(
        (note["start_line"].as_u64(), note["start_column"].as_u64()),
        (Some(5), Some(5))
    );
    assert_eq!(
        note["message"],
        "depends_on[1]: no project \"chekout-api\" (did you mean checkout-api?)"
    );

    // Required, the same pull request fails.
    relations(&mut env, RelationsMode::Require);
    env.send_pr("synchronize", cart, "cart", 4, &sha).await;
    env.settle().await;
    let run = env.only_run(cart, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    // GitHub adds an update's annotations to the run's.
    let last = run.annotations.last().expect("an annotation");
    assert_eq!(last["annotation_level"], "failure");
    assert_eq!(last["start_line"], 5);
}

#[tokio::test]
async fn a_production_project_on_a_deprecated_one_should_get_a_warning() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    env.repo("legacy", "name: old-api\nowner: t\nlifecycle: deprecated\n")
        .await;
    let shop = env
        .repo("shop", "name: shop\nowner: t\nlifecycle: production\n")
        .await;
    env.quiet().await;
    let sha = env.fake.pr_commit(
        shop,
        FILE,
        b"name: shop\nowner: t\nlifecycle: production\ndepends_on: [old-api]\n",
    );
    env.open_pr(shop, "shop", 5, &sha).await;
    env.settle().await;
    let run = env.only_run(shop, &sha);
    assert_eq!(
        run.conclusion.as_deref(),
        Some("success"),
        "never a failure"
    );
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    assert_eq!(run.annotations[0]["annotation_level"], "warning");
    assert_eq!(
        run.annotations[0]["message"],
        "depends_on[0]: \"old-api\" is deprecated; shop is in production and depends on it"
    );
}

#[tokio::test]
async fn on_the_default_branch_a_dependency_on_no_project_should_be_annotated_with_the_failure() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    let cart = env.repo("cart", "name: cart-api\nowner: t\n").await;
    env.quiet().await;
    let sha = env.fake.push_file(
        cart,
        FILE,
        b"name: cart-api\nowner: t\ndepends_on: [nobody]\n",
    );
    assert_eq!(env.reconcile(cart).await, "invalid");
    env.settle().await;
    let run = env.only_run(cart, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let note = &run.annotations[0];
    assert_eq!(note["annotation_level"], "failure");
    assert_eq!(note["start_line"], 3);
    assert_eq!(note["message"], "depends_on[0]: no project \"nobody\"");
}

#[tokio::test]
async fn a_public_repositorys_check_should_suggest_only_public_projects_and_cost_no_request() {
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Off);
    env.repo("payments", "name: payments-api\nowner: t\n").await;
    let shop = env.repo("shop", "name: shop\nowner: t\n").await;
    env.quiet().await;
    let text = b"name: shop\nowner: t\ndepends_on: [paymnts-api]\n";
    let open_public = |number: i64, sha: String| {
        let pr = pull_requests::Pr {
            repo: shop,
            installation: ACME,
            owner: "acme",
            name: "shop",
            number,
            sha: &sha,
            base: "main",
        };
        pull_requests::make_public(&pull_requests::pull_request("opened", &pr))
    };
    // Relations off: what the evaluation costs GitHub without them.
    let sha = env.fake.pr_commit(shop, FILE, text);
    env.deliver("pull_request", open_public(6, sha.clone()))
        .await;
    env.settle().await;
    let without = env.fake.total();
    assert!(env.only_run(shop, &sha).annotations.is_empty());

    relations(&mut env, RelationsMode::Warn);
    env.fake.reset_counts();
    let sha = env.fake.pr_commit(
        shop,
        FILE,
        b"name: shop\nowner: t\ndepends_on: [paymnts-api]\ndescription: again\n",
    );
    env.deliver("pull_request", open_public(7, sha.clone()))
        .await;
    env.settle().await;
    assert_eq!(env.fake.total(), without, "relations cost GitHub nothing");
    let run = env.only_run(shop, &sha);
    assert_eq!(
        run.annotations[0]["message"], "depends_on[0]: no project \"paymnts-api\"",
        "a private repository's project is not suggested"
    );
    let summary = run.summary.unwrap_or_default();
    assert!(!summary.contains("payments-api"), "{summary}");

    // The same on a private repository suggests it.
    let sha = env.fake.pr_commit(shop, FILE, text);
    env.open_pr(shop, "shop", 8, &sha).await;
    env.settle().await;
    let run = env.only_run(shop, &sha);
    assert_eq!(
        run.annotations[0]["message"],
        "depends_on[0]: no project \"paymnts-api\" (did you mean payments-api?)"
    );
}

#[tokio::test]
async fn a_public_repositorys_check_should_name_the_dependents_the_listing_found_public() {
    use roster::controller::Lister;
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Warn);
    let (checkout, [cart, orders, _]) = checkout_and_dependents(&env).await;
    // Two dependents are public on GitHub; nothing but the listing says so.
    env.fake.set_private(cart, false);
    env.fake.set_private(orders, false);
    env.source.lister().list().await.expect("listing");
    env.quiet().await;
    let sha = env
        .fake
        .pr_commit(checkout, FILE, b"owner: t\nname: checkout-svc\n");
    let pr = pull_requests::Pr {
        repo: checkout,
        installation: ACME,
        owner: "acme",
        name: "checkout",
        number: 3,
        sha: &sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr);
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.settle().await;
    let run = env.only_run(checkout, &sha);
    let note = run
        .annotations
        .iter()
        .find(|a| a["message"].as_str().unwrap_or("").contains("depend"))
        .expect("a note");
    assert_eq!(
        note["message"],
        "name: 3 projects depend on checkout-api: cart-api, orders-api and 1 project in other repositories"
    );
    let summary = run.summary.unwrap_or_default();
    assert!(!summary.contains("returns-worker"), "{summary}");
}

/// The `Roster` check of a public pull request on `shop` that adds a
/// dependency on `target`: its conclusion and annotations.
async fn public_dependency_check(
    env: &Env,
    shop: i64,
    number: i64,
    target: &str,
) -> (Option<String>, Vec<serde_json::Value>) {
    let file = format!("name: shop\nowner: t\nlifecycle: production\ndepends_on: [{target}]\n");
    let sha = env.fake.pr_commit(shop, FILE, file.as_bytes());
    let pr = pull_requests::Pr {
        repo: shop,
        installation: ACME,
        owner: "acme",
        name: "shop",
        number,
        sha: &sha,
        base: "main",
    };
    let body = pull_requests::pull_request("opened", &pr);
    env.deliver("pull_request", pull_requests::make_public(&body))
        .await;
    env.settle().await;
    let run = env.only_run(shop, &sha);
    (run.conclusion, run.annotations)
}

#[tokio::test]
async fn a_public_repositorys_check_should_treat_a_private_target_like_a_missing_one() {
    use roster::controller::Lister;
    let mut env = checks_env().await;
    relations(&mut env, RelationsMode::Require);
    env.repo("legacy", "name: old-api\nowner: t\nlifecycle: deprecated\n")
        .await;
    let shop = env
        .repo("shop", "name: shop\nowner: t\nlifecycle: production\n")
        .await;
    env.fake.set_private(shop, false);
    env.source.lister().list().await.expect("listing");
    env.quiet().await;

    let (private, private_notes) = public_dependency_check(&env, shop, 8, "old-api").await;
    let (missing, missing_notes) = public_dependency_check(&env, shop, 9, "new-api").await;
    // Nothing tells the private project from one that does not exist.
    assert_eq!(private, missing, "{private_notes:?}");
    assert_eq!(private.as_deref(), Some("failure"));
    assert!(
        !format!("{private_notes:?}").contains("deprecated"),
        "{private_notes:?}"
    );
    assert_eq!(
        private_notes[0]["message"],
        "depends_on[0]: no project \"old-api\""
    );
    assert_eq!(
        missing_notes[0]["message"],
        "depends_on[0]: no project \"new-api\""
    );
}
