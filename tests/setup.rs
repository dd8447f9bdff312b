//! Setup in one click, end to end against the fake GitHub: setup mode's
//! probes and one-time address, the manifest flow to a stored App and a
//! running GitHub source without a restart, the stored App after a restart,
//! the environment winning, `roster setup --print-env`, and every refusal
//! (token, state, callback) leaving nothing stored.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use axum::http::{header, Method, StatusCode};
use serde_json::Value;
use sqlx::PgPool;

use support::fake_github::manifest::ConversionFailure;
use support::fake_github::{routes, FakeGithub};
use support::github_server::project_yaml;
use support::http::{get, send};
use support::server::{eventually, free_port, Roster};
use support::setup_flow::{
    self, callback, post_form, state_of, stored_apps, submit, KEY, OTHER_KEY,
};

async fn database() -> (PgPool, String) {
    roster::db::testing::fresh_database()
        .await
        .expect("database")
}

fn logs_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A fake GitHub whose organisation `acme` holds one repository with a
/// project file, for the App once it is installed.
async fn fake_with_repo() -> FakeGithub {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    fake.add_repo_with_file(
        1,
        "widgets",
        "project.yaml",
        &project_yaml("widgets", "Widgets"),
    );
    fake
}

/// Runs `roster ARGS` with `env` only; waits for it to exit.
async fn run_roster(args: &[&str], env: Vec<(&'static str, String)>) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_roster"));
        cmd.args(&args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output()
    })
    .await
    .expect("join")
    .expect("run roster")
}

fn error_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("error: "))
        .map(str::to_owned)
        .collect()
}

/// A stored App as the manifest flow leaves it, sealed with `key`.
async fn store_app(pool: &PgPool, key: &str, webhook_secret: &str) {
    let key = roster::setup::SecretKey::from_hex(key).expect("key");
    let app = roster::setup::store::StoredApp {
        app_id: support::fake_github::APP_ID,
        slug: "roster".into(),
        html_url: "https://github.com/apps/roster".into(),
        pem: support::fake_github::PRIVATE_KEY.into(),
        webhook_secret: webhook_secret.into(),
        client_id: "Iv1.8a61f9b3a7aba766".into(),
        client_secret: "client-secret".into(),
    };
    assert!(roster::setup::store::save_app(pool, &key, &app)
        .await
        .expect("store the App"));
}

#[tokio::test]
async fn setup_mode_should_answer_the_probes_and_open_only_with_its_token() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, token) = setup_flow::start(&fake, &url, logs.path()).await;
    assert_eq!(
        get(&roster.url("/healthz")).await.expect("healthz").status,
        StatusCode::OK
    );
    assert_eq!(
        get(&roster.url("/readyz")).await.expect("readyz").status,
        StatusCode::OK
    );
    let lines = roster.logs();
    let setup_lines: Vec<&str> = lines
        .lines()
        .filter(|l| l.contains("/setup?token="))
        .collect();
    assert_eq!(setup_lines.len(), 1, "{lines}");
    assert!(
        setup_lines[0].contains(&format!("{}/setup?token={token}", roster.base)),
        "{lines}"
    );

    for path in [
        "/setup".to_owned(),
        "/setup?token=".to_owned(),
        format!("/setup?token={}", "0".repeat(64)),
    ] {
        let answer = get(&roster.url(&path)).await.expect("setup page");
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{path}: {}",
            answer.body
        );
    }
    let page = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("setup page");
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"name="org""#), "{}", page.body);
    // ROSTER_PUBLIC_URL pre-fills the address.
    assert!(
        page.body.contains(&format!(r#"value="{}""#, roster.base)),
        "{}",
        page.body
    );
    assert_eq!(page.header(header::CACHE_CONTROL), "no-store");
    assert_eq!(page.header(header::REFERRER_POLICY), "no-referrer");
    // The dashboard waits for an App.
    assert_eq!(
        get(&roster.url("/")).await.expect("root").status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // The API too, with its usual JSON error.
    let api = get(&roster.url("/api/v1/repos")).await.expect("api");
    assert_eq!(api.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        api.header(header::CONTENT_TYPE)
            .starts_with("application/json"),
        "{:?}",
        api.header(header::CONTENT_TYPE)
    );
    let error: Value = serde_json::from_str(&api.body).expect("a JSON answer");
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|e| e.contains("no GitHub App yet")),
        "{error}"
    );
    assert_eq!(stored_apps(&pool).await, 0);
}

#[tokio::test]
async fn the_manifest_flow_should_store_the_app_and_start_the_github_source() {
    let fake = fake_with_repo().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let started = Instant::now();
    let (roster, token) = setup_flow::start(&fake, &url, logs.path()).await;
    let t_setup_mode = started.elapsed();

    let step = Instant::now();
    let page = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("page");
    assert_eq!(page.status, StatusCode::OK);
    let t_page = step.elapsed();

    let step = Instant::now();
    let (answer, form) = submit(&roster, &token, "acme").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let (action, manifest) = form.unwrap_or_else(|| panic!("no manifest form: {}", answer.body));
    let t_manifest = step.elapsed();
    let state = state_of(&action);
    assert_eq!(
        action,
        format!(
            "{}/organizations/acme/settings/apps/new?state={state}",
            fake.web_url()
        )
    );
    let policy = answer.header(header::CONTENT_SECURITY_POLICY).to_owned();
    assert!(
        policy.contains(&format!("form-action 'self' {}", fake.web_url())),
        "{policy}"
    );
    let manifest: Value = serde_json::from_str(&manifest).expect("manifest is JSON");
    assert_eq!(manifest["url"], roster.base.as_str());
    assert_eq!(
        manifest["hook_attributes"]["url"],
        format!("{}/webhooks/github", roster.base)
    );
    assert_eq!(
        manifest["redirect_url"],
        format!("{}/setup/callback", roster.base)
    );
    assert_eq!(manifest["default_permissions"]["checks"], "write");

    // GitHub's pages: the manifest posted, "Create GitHub App" clicked.
    let step = Instant::now();
    let github_page = post_form(&action, &[("manifest", &manifest.to_string())]).await;
    assert_eq!(github_page.status, StatusCode::OK, "{}", github_page.body);
    let posted = fake.posted_manifests();
    assert_eq!(posted.len(), 1);
    assert_eq!(posted[0].org.as_deref(), Some("acme"));
    assert_eq!(posted[0].manifest, manifest);
    let created = post_form(
        &format!("{}/fake/apps/create", fake.web_url()),
        &[
            ("manifest", &manifest.to_string()),
            ("owner", "acme"),
            ("state", &state),
        ],
    )
    .await;
    assert_eq!(created.status, StatusCode::FOUND);
    let back = created.header(header::LOCATION).to_owned();
    assert!(
        back.starts_with(&format!("{}/setup/callback?code=", roster.base)),
        "{back}"
    );
    let t_github = step.elapsed();

    let step = Instant::now();
    let done = send(Method::GET, &back, &[], Vec::new())
        .await
        .expect("callback");
    let t_callback = step.elapsed();
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(
        done.header(header::LOCATION),
        format!("{}/apps/roster/installations/new", fake.web_url())
    );
    assert_eq!(stored_apps(&pool).await, 1);
    let sealed = roster::setup::store::testing::sealed(&pool)
        .await
        .expect("sealed")
        .expect("an App is stored");
    assert!(!String::from_utf8_lossy(&sealed).contains("PRIVATE KEY"));
    assert!(!String::from_utf8_lossy(&sealed).contains("webhook-secret"));

    // The GitHub source runs without a restart: the repository is synced.
    let step = Instant::now();
    eventually(
        "the repository synced by the new App",
        Duration::from_secs(30),
        || async {
            let answer = get(&roster.url("/api/v1/projects/widgets")).await.ok()?;
            (answer.status == StatusCode::OK).then_some(())
        },
    )
    .await;
    let t_synced = step.elapsed();
    assert!(fake.count(routes::INSTALLATIONS) >= 1);
    let closed = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("setup");
    assert_eq!(closed.status, StatusCode::NOT_FOUND);
    eprintln!(
        "setup flow against the fake GitHub: setup mode up {t_setup_mode:?}; setup page {t_page:?}; \
         POST /setup (manifest form) {t_manifest:?}; GitHub's pages {t_github:?}; \
         callback (exchange, seal, store) {t_callback:?}; source started and first repository synced {t_synced:?}; \
         total {:?}",
        started.elapsed()
    );
    assert!(roster
        .logs()
        .contains("setup: GitHub App registered and stored"));
}

#[tokio::test]
async fn after_a_restart_the_stored_app_should_be_used_and_the_environment_should_win() {
    let fake = fake_with_repo().await;
    let (pool, url) = database().await;
    store_app(&pool, KEY, "stored-secret").await;
    let logs = logs_dir();
    let port = free_port();
    let roster = Roster::start_on(port, &setup_flow::env(&fake, &url, port), logs.path()).await;
    eventually(
        "the repository synced by the stored App",
        Duration::from_secs(30),
        || async {
            let answer = get(&roster.url("/api/v1/projects/widgets")).await.ok()?;
            (answer.status == StatusCode::OK).then_some(())
        },
    )
    .await;
    let log = roster.logs();
    assert!(
        log.contains("using the GitHub App stored by setup"),
        "{log}"
    );
    assert!(!log.contains("/setup?token="), "{log}");
    assert_eq!(
        get(&roster.url("/setup")).await.expect("setup").status,
        StatusCode::NOT_FOUND
    );
    let signed = |secret: &str| roster::intake::sign(secret, b"{\"zen\":\"hi\",\"hook_id\":1}");
    let ping = |secret: String| {
        let base = roster.base.clone();
        async move {
            let signature = signed(&secret);
            send(
                Method::POST,
                &format!("{base}/webhooks/github"),
                &[
                    ("content-type", "application/json"),
                    ("x-github-event", "ping"),
                    ("x-github-delivery", &format!("{:032x}", fastrand::u128(..))),
                    ("x-hub-signature-256", &signature),
                ],
                b"{\"zen\":\"hi\",\"hook_id\":1}".to_vec(),
            )
            .await
            .expect("webhook")
            .status
        }
    };
    assert!(ping("stored-secret".into()).await.is_success());
    drop(roster);

    // An App in the environment wins as a whole: its secret, not the stored one.
    let port = free_port();
    let mut env = setup_flow::env(&fake, &url, port);
    env.push(("GITHUB_APP_ID", support::fake_github::APP_ID.to_string()));
    env.push((
        "GITHUB_APP_PRIVATE_KEY",
        support::fake_github::PRIVATE_KEY.to_owned(),
    ));
    env.push(("GITHUB_WEBHOOK_SECRET", "environment-secret".to_owned()));
    let roster = Roster::start_on(port, &env, logs.path()).await;
    let ping = |secret: &str| {
        let base = roster.base.clone();
        let signature = signed(secret);
        async move {
            send(
                Method::POST,
                &format!("{base}/webhooks/github"),
                &[
                    ("content-type", "application/json"),
                    ("x-github-event", "ping"),
                    ("x-github-delivery", &format!("{:032x}", fastrand::u128(..))),
                    ("x-hub-signature-256", &signature),
                ],
                b"{\"zen\":\"hi\",\"hook_id\":1}".to_vec(),
            )
            .await
            .expect("webhook")
            .status
        }
    };
    assert!(ping("environment-secret").await.is_success());
    assert_eq!(ping("stored-secret").await, StatusCode::UNAUTHORIZED);
    assert!(!roster
        .logs()
        .contains("using the GitHub App stored by setup"));
}

#[tokio::test]
async fn print_env_should_print_the_stored_app_as_lines_serve_reads_back() {
    let fake = fake_with_repo().await;
    let (pool, url) = database().await;
    store_app(&pool, KEY, "stored-secret").await;
    let env = vec![
        ("DATABASE_URL", url.clone()),
        ("ROSTER_SECRET_KEY", KEY.to_owned()),
    ];
    let output = run_roster(&["setup", "--print-env"], env).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(
        lines[0],
        format!("GITHUB_APP_ID={}", support::fake_github::APP_ID)
    );
    assert!(
        lines[1].starts_with("GITHUB_APP_PRIVATE_KEY=-----BEGIN"),
        "{stdout}"
    );
    assert!(lines[1].contains("\\n"), "{stdout}");
    assert_eq!(lines[2], "GITHUB_WEBHOOK_SECRET=stored-secret");

    // Those lines alone (no key) configure `serve`.
    let port = free_port();
    let mut env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", url.clone()),
        ("GITHUB_API_URL", fake.api_url().to_string()),
        ("GITHUB_GRAPHQL_URL", fake.graphql_url().to_string()),
    ];
    for (line, name) in lines.iter().zip([
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
    ]) {
        let value = line
            .split_once('=')
            .map(|(_, v)| v.to_owned())
            .unwrap_or_default();
        env.push((name, value));
    }
    let logs = logs_dir();
    let roster = Roster::start_on(port, &env, logs.path()).await;
    eventually(
        "the repository synced from the printed settings",
        Duration::from_secs(30),
        || async {
            let answer = get(&roster.url("/api/v1/projects/widgets")).await.ok()?;
            (answer.status == StatusCode::OK).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_stored_app_under_another_key_should_stop_with_one_line_not_a_second_setup() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    store_app(&pool, OTHER_KEY, "stored-secret").await;
    let port = free_port();
    let env = setup_flow::env(&fake, &url, port);
    let output = run_roster(&["serve"], {
        let mut env = env.clone();
        env.push(("ROSTER_LISTEN", format!("127.0.0.1:{port}")));
        env
    })
    .await;
    let errors = error_lines(&output.stderr);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].starts_with("error: ROSTER_SECRET_KEY: cannot decrypt"),
        "{stderr}"
    );
    assert!(!stderr.contains("/setup?token="), "{stderr}");
    // The one line, nothing logged before it (on either stream).
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stderr.lines().chain(stdout.lines()).collect();
    assert_eq!(lines, [errors[0].as_str()], "{stderr}{stdout}");

    let output = run_roster(
        &["setup", "--print-env"],
        vec![
            ("DATABASE_URL", url.clone()),
            ("ROSTER_SECRET_KEY", KEY.to_owned()),
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert!(error_lines(&output.stderr)[0].starts_with("error: ROSTER_SECRET_KEY: cannot decrypt"));
    assert_eq!(stored_apps(&pool).await, 1);
}

#[tokio::test]
async fn setup_mode_on_a_shared_database_should_need_a_key() {
    let (_pool, url) = database().await;
    let port = free_port();
    let output = run_roster(
        &["serve"],
        vec![
            ("DATABASE_URL", url),
            ("ROSTER_LISTEN", format!("127.0.0.1:{port}")),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let errors = error_lines(&output.stderr);
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].starts_with("error: ROSTER_SECRET_KEY: required in setup mode"),
        "{stderr}"
    );
    // Checked with the other settings, before the port is bound.
    assert!(!stderr.contains("listening"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn a_missing_or_wrong_token_should_be_refused_and_store_nothing() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, _token) = setup_flow::start(&fake, &url, logs.path()).await;
    for token in ["", "nope", &"0".repeat(64)] {
        let (answer, form) = submit(&roster, token, "acme").await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{token:?}: {}",
            answer.body
        );
        assert!(form.is_none());
    }
    let answer = post_form(
        &roster.url("/setup"),
        &[("org", "acme"), ("public_url", &roster.base)],
    )
    .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    let states = roster::setup::store::testing::state_count(&pool)
        .await
        .expect("states");
    assert_eq!(states, 0);
    assert_eq!(stored_apps(&pool).await, 0);
}

/// A state issued by this Roster for `acme`, and the manifest it came
/// with; `token` is used up and replaced by the one the page hands on.
async fn issued_state(roster: &Roster, token: &mut String) -> (String, Value) {
    let (answer, form) = submit(roster, token, "acme").await;
    let (action, manifest) = form.unwrap_or_else(|| panic!("no form: {}", answer.body));
    *token = setup_flow::next_token(&answer.body)
        .unwrap_or_else(|| panic!("no next token: {}", answer.body));
    (
        state_of(&action),
        serde_json::from_str(&manifest).expect("manifest"),
    )
}

#[tokio::test]
async fn a_forged_replayed_or_expired_state_should_be_refused_and_store_nothing() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, mut token) = setup_flow::start(&fake, &url, logs.path()).await;
    let (state, manifest) = issued_state(&roster, &mut token).await;

    let expect_400 = |answer: support::http::Answer, says: &'static str| {
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
        assert!(
            answer.body.contains(says),
            "expected {says:?}: {}",
            answer.body
        );
    };
    // Forged: no state, a made-up one, a changed signature, another key's.
    let code = fake.manifest_code(manifest.clone(), "acme");
    expect_400(callback(&roster, &code, "").await, "did not issue it");
    expect_400(
        callback(&roster, &code, "abc.def").await,
        "did not issue it",
    );
    let (nonce, signature) = state.split_once('.').expect("nonce.signature");
    let flipped = format!(
        "{nonce}.{}{}",
        &signature[..signature.len() - 1],
        if signature.ends_with('0') { "1" } else { "0" }
    );
    expect_400(callback(&roster, &code, &flipped).await, "did not issue it");
    let other = roster::setup::SecretKey::from_hex(OTHER_KEY).expect("key");
    let (foreign, _) = roster::setup::issue_state(&other);
    expect_400(callback(&roster, &code, &foreign).await, "did not issue it");
    assert_eq!(fake.conversions(), 0, "no exchange for a forged state");

    // Replayed: the state was used by a callback (whose code GitHub refused).
    let refused = callback(&roster, "c0deffffffff", &state).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    expect_400(callback(&roster, &code, &state).await, "already used");

    // Expired: issued more than an hour ago.
    let (old, _) = issued_state(&roster, &mut token).await;
    let (old_nonce, _) = old.split_once('.').expect("nonce");
    roster::setup::store::testing::age_state(&pool, old_nonce, 61)
        .await
        .expect("age the state");
    expect_400(callback(&roster, &code, &old).await, "expired");
    assert_eq!(stored_apps(&pool).await, 0);
    // The flow still works with a fresh state afterwards.
    let (fresh, _) = issued_state(&roster, &mut token).await;
    assert_eq!(
        callback(&roster, &code, &fresh).await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(stored_apps(&pool).await, 1);
}

#[tokio::test]
async fn a_bad_callback_should_store_nothing_and_github_down_should_be_retryable() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, mut token) = setup_flow::start(&fake, &url, logs.path()).await;

    // A code for another App: created for another Roster's address.
    let (state, manifest) = issued_state(&roster, &mut token).await;
    let mut elsewhere = manifest.clone();
    elsewhere["url"] = Value::from("https://evil.example");
    let code = fake.manifest_code(elsewhere, "acme");
    let answer = callback(&roster, &code, &state).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(answer.body.contains("another App"), "{}", answer.body);
    // … or owned by another organisation.
    let (state, manifest) = issued_state(&roster, &mut token).await;
    let code = fake.manifest_code(manifest.clone(), "globex");
    let answer = callback(&roster, &code, &state).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(answer.body.contains("another App"), "{}", answer.body);

    // GitHub answers 404 (unknown or used code) and 422.
    let (state, _) = issued_state(&roster, &mut token).await;
    let answer = callback(&roster, "c0de00000bad", &state).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(
        answer.body.contains("GitHub refused the code (404)"),
        "{}",
        answer.body
    );
    fake.fail_conversions(Some(ConversionFailure::Status(422)));
    let (state, manifest) = issued_state(&roster, &mut token).await;
    let code = fake.manifest_code(manifest, "acme");
    let answer = callback(&roster, &code, &state).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.body);
    assert!(answer.body.contains("(422)"), "{}", answer.body);

    // GitHub down (5xx, a dropped connection): nothing stored, and the same
    // callback works once GitHub is back.
    let (state, manifest) = issued_state(&roster, &mut token).await;
    let code = fake.manifest_code(manifest, "acme");
    for failure in [ConversionFailure::Status(502), ConversionFailure::Close] {
        fake.fail_conversions(Some(failure));
        let answer = callback(&roster, &code, &state).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_GATEWAY,
            "{failure:?}: {}",
            answer.body
        );
        assert!(answer.body.contains("Reload this page"), "{}", answer.body);
        assert_eq!(stored_apps(&pool).await, 0);
    }
    fake.fail_conversions(None);
    let answer = callback(&roster, &code, &state).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.body);
    assert_eq!(stored_apps(&pool).await, 1);
}

#[tokio::test]
async fn bad_setup_input_should_be_answered_with_the_form_and_a_reason() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    // No ROSTER_PUBLIC_URL: the address is typed on the page.
    let (roster, token) = setup_flow::start_typed(&fake, &url, logs.path()).await;
    let cases = [
        ("../acme", roster.base.clone(), "not a GitHub organisation"),
        ("acme", "roster.example.com".to_owned(), "not a URL"),
        (
            "acme",
            "ftp://roster.example.com".to_owned(),
            "http or https",
        ),
        ("acme", format!("{}/?next=x", roster.base), "plain address"),
    ];
    for (org, public_url, says) in cases {
        let answer = post_form(
            &roster.url("/setup"),
            &[("token", &token), ("org", org), ("public_url", &public_url)],
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{org} {public_url}: {}",
            answer.body
        );
        assert!(
            answer.body.contains(says),
            "expected {says:?}: {}",
            answer.body
        );
        // The form comes back with what was typed, to correct it.
        assert!(answer.body.contains(r#"id="setup""#), "{}", answer.body);
        assert!(setup_flow::manifest_form(&answer.body).is_none());
    }
    let states = roster::setup::store::testing::state_count(&pool)
        .await
        .expect("states");
    assert_eq!(states, 0);

    // A personal account: GitHub's page without an organisation.
    let (answer, form) = submit(&roster, &token, "").await;
    let (action, _) = form.unwrap_or_else(|| panic!("no form: {}", answer.body));
    assert_eq!(
        action,
        format!(
            "{}/settings/apps/new?state={}",
            fake.web_url(),
            state_of(&action)
        )
    );
    let status = roster.terminate();
    assert!(status.success(), "setup mode stops on SIGTERM: {status}");
}

#[tokio::test]
async fn any_replica_should_finish_the_flow_and_the_others_should_follow() {
    let fake = fake_with_repo().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (first, old) = setup_flow::start(&fake, &url, logs.path()).await;
    let (second, token) = setup_flow::start(&fake, &url, logs.path()).await;
    // The second replica prints the first one's address: one token, kept
    // in the database, opens setup on both.
    assert_eq!(old, token, "both replicas print one token");
    for replica in [&first, &second] {
        let page = get(&replica.url(&format!("/setup?token={token}")))
            .await
            .expect("setup page");
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    }
    let tokens: i64 = sqlx::query_scalar("select count(*) from setup_tokens")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(tokens, 1);
    // The token on the first replica, its state, the second replica's
    // callback.
    let (answer, form) = submit(&first, &token, "acme").await;
    let (action, manifest) = form.unwrap_or_else(|| panic!("no form: {}", answer.body));
    let manifest: Value = serde_json::from_str(&manifest).expect("manifest");
    assert_eq!(manifest["url"], first.base.as_str());
    let code = fake.manifest_code(manifest, "acme");
    let done = callback(&second, &code, &state_of(&action)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(stored_apps(&pool).await, 1);
    // The first replica finds the stored App on its own and starts too.
    eventually(
        "the first replica out of setup mode",
        Duration::from_secs(20),
        || async {
            let answer = get(&first.url("/setup")).await.ok()?;
            (answer.status == StatusCode::NOT_FOUND).then_some(())
        },
    )
    .await;
    eventually(
        "the first replica serving the registry",
        Duration::from_secs(30),
        || async {
            let answer = get(&first.url("/api/v1/projects/widgets")).await.ok()?;
            (answer.status == StatusCode::OK).then_some(())
        },
    )
    .await;
    assert!(
        first
            .logs()
            .contains("using the GitHub App stored by setup"),
        "{}",
        first.logs()
    );
}

#[tokio::test]
async fn with_the_private_database_the_key_should_be_made_in_the_data_folder() {
    use std::os::unix::fs::PermissionsExt;
    let fake = FakeGithub::start().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    // The private PostgreSQL may run as the `postgres` user: let it in.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data_dir = tmp.path().join("data");
    let env = [
        ("ROSTER_DATA_DIR", data_dir.display().to_string()),
        ("GITHUB_API_URL", fake.api_url().to_string()),
        ("GITHUB_URL", fake.web_url()),
    ];
    let roster = Roster::start(&env, tmp.path()).await;
    let token = setup_flow::token(&roster).await;
    let key_file = data_dir.join(roster::setup::KEY_FILE);
    let mode = std::fs::metadata(&key_file)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let key = std::fs::read_to_string(&key_file).expect("key");
    assert_eq!(key.trim().len(), 64);
    let page = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("page");
    assert_eq!(page.status, StatusCode::OK);
    assert!(roster.terminate().success());

    // The next start keeps the key (a stored App stays readable).
    let roster = Roster::start(&env, tmp.path()).await;
    setup_flow::token(&roster).await;
    assert_eq!(std::fs::read_to_string(&key_file).expect("key"), key);
    assert!(roster.terminate().success());
}

#[tokio::test]
async fn a_restart_should_print_the_same_token_and_wrong_tokens_be_throttled() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (before, old) = setup_flow::start(&fake, &url, logs.path()).await;
    let status = before.terminate();
    assert!(status.success(), "{status}");
    let (roster, token) = setup_flow::start(&fake, &url, logs.path()).await;
    assert_eq!(old, token, "the unused token is printed again");
    let page = |token: String| {
        let url = roster.url(&format!("/setup?token={token}"));
        async move { get(&url).await.expect("setup page") }
    };
    let tokens: i64 = sqlx::query_scalar("select count(*) from setup_tokens")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(tokens, 1, "one token");
    assert_eq!(page(token.clone()).await.status, StatusCode::OK);

    // Wrong tokens: ten are refused, then the client is locked out, even
    // with the right one, and told how long for.
    for k in 1..10 {
        let wrong = page(format!("{k:064x}")).await;
        assert_eq!(wrong.status, StatusCode::FORBIDDEN, "try {k}");
    }
    let locked = page("f".repeat(64)).await;
    assert_eq!(locked.status, StatusCode::FORBIDDEN, "the tenth is counted");
    let locked = page(token.clone()).await;
    assert_eq!(
        locked.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        locked.body
    );
    let wait: u64 = locked.header(header::RETRY_AFTER).parse().unwrap_or(0);
    assert!(wait > 0, "Retry-After: {wait}");
}

async fn states(pool: &PgPool) -> i64 {
    sqlx::query_scalar("select count(*) from setup_states")
        .fetch_one(pool)
        .await
        .expect("count the states")
}

/// The address in the log opens one setup: the request that uses it gets
/// the next token, and the token itself is refused from then on, on the
/// page and on the form, with no state issued.
#[tokio::test]
async fn a_used_setup_token_should_answer_403_and_issue_nothing() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, token) = setup_flow::start(&fake, &url, logs.path()).await;
    let (answer, form) = submit(&roster, &token, "acme").await;
    assert!(form.is_some(), "the first use: {}", answer.body);
    let next = setup_flow::next_token(&answer.body).expect("the next token");
    assert_ne!(next, token);
    assert!(
        !roster.logs().contains(&next),
        "the next token goes to the browser alone"
    );
    let issued = states(&pool).await;
    let page = get(&roster.url(&format!("/setup?token={token}")))
        .await
        .expect("setup page");
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.body);
    assert!(page.body.contains("it was used"), "{}", page.body);
    let (again, form) = submit(&roster, &token, "acme").await;
    assert_eq!(again.status, StatusCode::FORBIDDEN, "{}", again.body);
    assert!(form.is_none());
    assert_eq!(states(&pool).await, issued, "no state for a used token");
    // The token handed on opens the form in its place.
    let page = get(&roster.url(&format!("/setup?token={next}")))
        .await
        .expect("setup page");
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
}

/// Two uses of one token at once: exactly one gets the form.
#[tokio::test]
async fn two_uses_of_one_setup_token_at_once_should_give_one_form() {
    let fake = FakeGithub::start().await;
    let (pool, url) = database().await;
    let logs = logs_dir();
    let (roster, token) = setup_flow::start(&fake, &url, logs.path()).await;
    let (one, two) = tokio::join!(
        submit(&roster, &token, "acme"),
        submit(&roster, &token, "acme")
    );
    let mut answers = [one.0.status, two.0.status];
    answers.sort();
    assert_eq!(answers, [StatusCode::OK, StatusCode::FORBIDDEN]);
    assert_eq!(
        usize::from(one.1.is_some()) + usize::from(two.1.is_some()),
        1
    );
    assert_eq!(states(&pool).await, 1, "one state issued");
}
