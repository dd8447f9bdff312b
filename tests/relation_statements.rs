//! What resolving dependencies costs a reconcile, counted on the wire
//! (docs/contract.md#relations): every statement the registry's handler
//! sends goes through a proxy that counts them, and a file with
//! `depends_on` costs at most one statement more than the same file
//! without, whether the reconcile creates the entries or updates them:
//! none under `warn` (resolved when read), one indexed read under
//! `require` when every name resolves.

use crate::support;
use support::registry::{handler, installed_repo, queue};
use support::statement_count::StatementCount;

use roster::controller::Handler;
use roster::project::relations::RelationsMode;
use roster::registry::RegistryHandler;
use roster::source::{FileState, Observed, RepoId};

/// Applies `yaml` at `sha` as `acme/{name}` (id `id`); the statements it took.
async fn cost(
    handler: &RegistryHandler,
    proxy: &StatementCount,
    (name, id): (&str, i64),
    sha: &str,
    yaml: &str,
) -> u64 {
    let observed = Observed::Present {
        repo: installed_repo("acme", name, 1),
        file: FileState::Found {
            sha: sha.to_owned(),
            bytes: yaml.as_bytes().to_vec(),
        },
    };
    let before = proxy.statements();
    let outcome = handler.apply(&RepoId(id), Ok(observed)).await;
    assert_eq!(outcome.ok(), Some("synced"), "{name} at {sha}");
    proxy.statements() - before
}

fn file(name: &str, description: &str, depends_on: &str) -> String {
    format!("name: {name}\nowner: team-{name}\ndescription: {description}\n{depends_on}")
}

#[tokio::test]
async fn resolving_dependencies_should_add_at_most_one_statement_to_a_reconcile() {
    let (pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let proxy = StatementCount::start(&url).await;
    let counted = proxy.pool().await;
    let queue = queue(&pool);
    let targets = handler(&pool, queue.clone());
    for (k, target) in ["stock-api", "checkout-api", "cart-api"].iter().enumerate() {
        let observed = Observed::Present {
            repo: installed_repo("acme", *target, 1),
            file: FileState::Found {
                sha: "a".repeat(40),
                bytes: format!("name: {target}\nowner: t\n").into_bytes(),
            },
        };
        let applied = targets.apply(&RepoId(k as i64 + 1), Ok(observed)).await;
        assert_eq!(applied.ok(), Some("synced"));
    }
    let deps = "depends_on: [stock-api, checkout-api, cart-api]\n";
    let mut id = 100;
    for mode in [
        RelationsMode::Off,
        RelationsMode::Warn,
        RelationsMode::Require,
    ] {
        let handler = handler(&counted, queue.clone()).with_relations(mode);
        // A connection's first use of a statement or a type reads the
        // server's catalog once: a first repository takes that, uncounted.
        let mut costs = Vec::new();
        for depends_on in ["", deps, "", deps] {
            id += 1;
            let repo = (format!("svc-{id}"), id);
            let at = |sha: char| sha.to_string().repeat(40);
            let (name, id) = (repo.0.as_str(), repo.1);
            let created = cost(
                &handler,
                &proxy,
                (name, id),
                &at('1'),
                &file(name, "one", depends_on),
            )
            .await;
            let updated = cost(
                &handler,
                &proxy,
                (name, id),
                &at('2'),
                &file(name, "two", depends_on),
            )
            .await;
            let unchanged = cost(
                &handler,
                &proxy,
                (name, id),
                &at('3'),
                &file(name, "two", depends_on),
            )
            .await;
            costs.push([created, updated, unchanged]);
        }
        let (without, with) = (costs[2], costs[3]);
        println!("{mode:?}: statements (created, updated, unchanged) without depends_on {without:?}, with {with:?}");
        assert!(
            without.iter().all(|&n| n > 5),
            "the proxy counts: {without:?}"
        );
        for k in 0..3 {
            assert!(
                with[k] <= without[k] + 1,
                "{mode:?}: {with:?} with depends_on against {without:?} without"
            );
        }
        if mode != RelationsMode::Require {
            assert_eq!(with, without, "{mode:?}: nothing is read to resolve");
        }
    }
}
