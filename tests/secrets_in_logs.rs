//! Secrets never reach the logs or an answer (issue "Hostile input"): an
//! end-to-end run at `RUST_LOG=debug` — listing, webhooks good and forged,
//! the API and dashboard with the right, a wrong and no token, GitHub
//! failing on reads and on token creation — and then every captured log
//! line and every answer (status line, headers, body) is searched for the
//! webhook secret, each line of the App's private key, the API token, the
//! wrong token, every installation token the fake GitHub issued and the
//! App's JWTs.

use crate::support;
use support::fake_github;
use support::github_server;

use std::time::Duration;

use axum::http::Method;
use fake_github::{routes, FakeGithub, Fault, FaultKind, PRIVATE_KEY};
use github_server::{
    github_env, project_yaml, push_payload, repo, send_webhook, wait_synced, FILE,
};
use roster::db::testing::fresh_database;
use support::http::{self, Answer};
use support::receiver::{Behaviour, Receiver};
use support::server::{eventually, Roster};

/// Start of every JWT whose header is `{"alg":"RS256",...}` or `{"typ":...`.
const JWT_PREFIXES: [&str; 2] = ["eyJhbGciOi", "eyJ0eXAiOi"];

fn secret(prefix: &str) -> String {
    format!("{prefix}{:032x}", fastrand::u128(..))
}

/// Everything of an answer a client sees.
fn seen(answer: &Answer) -> String {
    let headers: Vec<String> = answer
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {}", String::from_utf8_lossy(v.as_bytes())))
        .collect();
    format!("{}\n{}\n{}", answer.status, headers.join("\n"), answer.body)
}

#[tokio::test]
async fn secrets_should_never_reach_logs_or_answers() {
    let webhook_secret = secret("whsec-");
    let api_token = secret("apitok-");
    let wrong_token = secret("wrongtok-");
    // A notification target keeping its secret in its URL, as Slack's and
    // Discord's do: the HTTP client's debug lines carry whole URLs.
    let target_secret = secret("hookkey-");
    let receiver = Receiver::start("notify-signing-key", Behaviour::Ok).await;

    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    // Tokens that live less than the client's refresh margin are minted
    // anew for every call: many tokens pass through the server.
    fake.set_token_lifetime(Duration::from_secs(120));
    let id = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "before"));
    let (_pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let mut env = github_env(&fake, &url);
    env.push(("GITHUB_WEBHOOK_SECRET", webhook_secret.clone()));
    env.push(("ROSTER_API_TOKEN", api_token.clone()));
    env.push(("ROSTER_LOG_FORMAT", "text".to_owned()));
    env.push(("RUST_LOG", "debug".to_owned()));
    env.push((
        "ROSTER_NOTIFY_URLS",
        format!("{}?key={target_secret}", receiver.url),
    ));
    env.push(("ROSTER_NOTIFY_SECRET", "notify-signing-key".to_owned()));
    let server = Roster::start(&env, logs.path()).await;
    let base = server.base.clone();
    let mut answers: Vec<Answer> = Vec::new();

    let head = fake.head(id).expect("a head");
    wait_synced(&base, "svc", &head, Duration::from_secs(20)).await;

    // Webhooks: a good one, a forged one, a signed one that is not JSON.
    let head = fake.push_file(id, FILE, project_yaml("svc", "after").as_bytes());
    let body = push_payload(id, "acme", "svc");
    let good = send_webhook(&base, &webhook_secret, "push", "d-good", body.clone()).await;
    let forged = send_webhook(&base, &wrong_token, "push", "d-forged", body.clone()).await;
    let garbled = send_webhook(
        &base,
        &webhook_secret,
        "push",
        "d-bad",
        b"{not json".to_vec(),
    )
    .await;
    for (answer, status) in [(good, 202), (forged, 401), (garbled, 400)] {
        let answer = answer.expect("the server answers");
        assert_eq!(answer.status, status, "{}", answer.body);
        answers.push(answer);
    }
    wait_synced(&base, "svc", &head, Duration::from_secs(20)).await;

    // The write API with the right token, a wrong one and none.
    let bearer = |token: &str| format!("Bearer {token}");
    for (token, status) in [
        (Some(bearer(&api_token)), 202),
        (Some(bearer(&wrong_token)), 401),
        (None, 401),
    ] {
        for path in ["/api/v1/resync", "/api/v1/repos/acme/svc/resync"] {
            let headers: Vec<(&str, &str)> = token
                .as_deref()
                .map(|t| vec![("authorization", t)])
                .unwrap_or_default();
            let answer = http::send(Method::POST, &format!("{base}{path}"), &headers, Vec::new())
                .await
                .expect("the server answers");
            assert_eq!(answer.status, status, "{path}: {}", answer.body);
            answers.push(answer);
        }
    }
    // Dashboard sign-in, refused and accepted.
    for token in [&wrong_token, &api_token] {
        let form = format!("token={token}");
        let answer = http::send(
            Method::POST,
            &format!("{base}/signin"),
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                ("origin", &base),
            ],
            form.into_bytes(),
        )
        .await
        .expect("the server answers");
        answers.push(answer);
    }

    // GitHub fails: on reading the repository, then on minting tokens.
    fake.inject(Fault::always(FaultKind::ServerError).on(routes::GRAPHQL_READ));
    fake.push_file(id, FILE, project_yaml("svc", "broken").as_bytes());
    let answer = send_webhook(&base, &webhook_secret, "push", "d-fail", body.clone())
        .await
        .expect("the server answers");
    assert_eq!(answer.status, 202);
    eventually("acme/svc in error", Duration::from_secs(10), || async {
        repo(&base, "svc").await.filter(|r| r["status"] == "error")
    })
    .await;
    fake.clear_faults();
    let failed_so_far = server.logs().matches("reconcile failed").count();
    fake.reset_counts();
    fake.inject(Fault::always(FaultKind::Garbage).on(routes::ACCESS_TOKENS));
    let answer = send_webhook(&base, &webhook_secret, "push", "d-token", body)
        .await
        .expect("the server answers");
    assert_eq!(answer.status, 202);
    eventually(
        "a reconcile failed on minting a token",
        Duration::from_secs(15),
        || async {
            let failed = server.logs().matches("reconcile failed").count() > failed_so_far;
            (failed && fake.count(routes::ACCESS_TOKENS) > 0).then_some(())
        },
    )
    .await;
    fake.clear_faults();

    receiver
        .wait_until(
            "a notification at the target",
            Duration::from_secs(20),
            |received| received.iter().any(|r| r.acknowledged),
        )
        .await;

    // Everything there is to read.
    for path in [
        "/api/v1/repos",
        "/api/v1/repos/acme/svc",
        "/api/v1/projects",
        "/api/v1/projects/svc",
        "/api/v1/deliveries",
        "/api/v1/holds",
        "/",
        "/repos/acme/svc",
        "/projects",
        "/deliveries",
        "/signin",
        "/metrics",
        "/healthz",
        "/readyz",
    ] {
        let answer = http::get(&format!("{base}{path}"))
            .await
            .expect("the server answers");
        assert!(answer.status.is_success(), "{path}: {}", answer.status);
        answers.push(answer);
    }

    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
    let log = std::fs::read_to_string(
        logs.path()
            .read_dir()
            .expect("logs")
            .flatten()
            .next()
            .expect("a log")
            .path(),
    )
    .expect("the log");
    assert!(log.contains("DEBUG"), "debug logging was not on");

    let tokens = fake.issued_tokens();
    assert!(tokens.len() >= 2, "the fake issued {} tokens", tokens.len());
    let key_lines: Vec<&str> = PRIVATE_KEY
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 16)
        .collect();
    assert!(!key_lines.is_empty());
    let mut secrets: Vec<(String, String)> = vec![
        ("the webhook secret".into(), webhook_secret.clone()),
        ("the API token".into(), api_token.clone()),
        ("a wrong API token".into(), wrong_token.clone()),
        (
            "a notification target's secret".into(),
            target_secret.clone(),
        ),
    ];
    secrets.extend(
        key_lines
            .iter()
            .map(|l| ("a line of the private key".to_owned(), (*l).to_owned())),
    );
    secrets.extend(
        tokens
            .iter()
            .map(|t| ("an installation token".to_owned(), t.clone())),
    );
    secrets.extend(
        JWT_PREFIXES
            .iter()
            .map(|p| ("an App JWT".to_owned(), (*p).to_owned())),
    );

    let answers_text: Vec<String> = answers.iter().map(seen).collect();
    for (what, value) in &secrets {
        if let Some(line) = log.lines().find(|line| line.contains(value.as_str())) {
            panic!("{what} is in the log: {line}");
        }
        if let Some(answer) = answers_text.iter().find(|a| a.contains(value.as_str())) {
            panic!("{what} is in an answer: {answer}");
        }
    }
    println!(
        "{} log lines at debug and {} answers hold none of {} secrets ({} installation tokens)",
        log.lines().count(),
        answers.len(),
        secrets.len(),
        tokens.len()
    );
}
