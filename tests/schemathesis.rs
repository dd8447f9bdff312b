//! Schemathesis fuzzes the API from its own OpenAPI document
//! (docs/contract.md#http-routes): the real server on the example
//! organisation, every check (`--checks all`), a few examples per operation
//! and a time bound. `scripts/test` installs the pinned Schemathesis in a
//! virtual environment under `target/` and names it in
//! `ROSTER_SCHEMATHESIS`; without it (PyPI unreachable, or a plain `cargo
//! test`) this test says so and passes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support;
use support::server::{eventually, Roster};

const TOKEN: &str = "schemathesis-token";

/// Test cases per operation and phase, and the whole run's bound.
const MAX_EXAMPLES: &str = "20";
const MAX_SECONDS: &str = "60";

#[tokio::test]
async fn schemathesis_should_find_nothing_with_every_check() {
    let Some(schemathesis) = std::env::var_os("ROSTER_SCHEMATHESIS") else {
        eprintln!(
            "note: ROSTER_SCHEMATHESIS is not set (scripts/test sets it): Schemathesis not run"
        );
        return;
    };
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let logs = tempfile::tempdir().expect("a log folder");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = [
        ("DATABASE_URL", url),
        (
            "ROSTER_SOURCE",
            format!("dir:{}", root.join("examples/org").display()),
        ),
        (
            "ROSTER_PROJECT_FILES",
            "project.yaml,services/*/project.yaml".to_owned(),
        ),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_owned()),
        ("ROSTER_API_TOKEN", TOKEN.to_owned()),
    ];
    let server = Roster::start(&env, logs.path()).await;
    eventually(
        "the example organisation read",
        Duration::from_secs(30),
        || async {
            let answer = support::http::get(&server.url("/api/v1/projects"))
                .await
                .ok()?;
            let items = answer.json()["items"].as_array()?.len();
            (items > 0).then_some(())
        },
    )
    .await;
    let report = logs.path().join("schemathesis");
    let run = Command::new(schemathesis)
        // Its cache goes beside the log, not into the checkout.
        .current_dir(logs.path())
        .arg("--config-file")
        .arg(root.join("tests/fixtures/schemathesis.toml"))
        .arg("run")
        .arg(server.url("/api/v1/openapi.json"))
        .args(["--checks", "all"])
        .args(["--max-examples", MAX_EXAMPLES])
        .args(["--max-time", MAX_SECONDS])
        .args(["--seed", "52"])
        .args(["--workers", "2"])
        .args(["--request-timeout", "10"])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .arg("--report-dir")
        .arg(&report)
        .output()
        .expect("run schemathesis");
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "Schemathesis found failures ({}):\n{out}\n{err}\nserver log:\n{}",
        run.status,
        server.logs()
    );
    let logged = server.logs();
    let errors: Vec<&str> = logged.lines().filter(|l| l.contains("ERROR")).collect();
    assert!(
        errors.is_empty(),
        "the server logged errors:\n{}",
        errors.join("\n")
    );
}
