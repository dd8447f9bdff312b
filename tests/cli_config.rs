//! `roster serve` with a misconfiguration stops at start: exit code 2 and
//! one stderr line `error: SETTING: what is wrong`, never a panic.

use std::process::{Command, Output};

const ROSTER: &str = env!("CARGO_BIN_EXE_roster");

/// Runs `roster serve` with only the given environment (plus PATH/HOME).
fn serve_with(env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(ROSTER);
    cmd.arg("serve").env_clear();
    for var in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run the roster binary")
}

fn assert_stops_naming(output: &Output, setting: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {stderr}");
    let prefix = format!("error: {setting}: ");
    assert!(
        lines[0].starts_with(&prefix),
        "expected {prefix:?}, got: {stderr}"
    );
}

fn valid_dir_source() -> String {
    format!("dir:{}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn serve_with_a_missing_dir_should_name_roster_source() {
    let output = serve_with(&[("ROSTER_SOURCE", "dir:/no/such/folder/for/roster")]);
    assert_stops_naming(&output, "ROSTER_SOURCE");
}

#[test]
fn serve_with_an_unreadable_key_path_should_name_the_path_setting() {
    let output = serve_with(&[
        ("GITHUB_APP_ID", "1234"),
        ("GITHUB_APP_PRIVATE_KEY_PATH", "/no/such/roster-key.pem"),
        ("GITHUB_WEBHOOK_SECRET", "secret"),
    ]);
    assert_stops_naming(&output, "GITHUB_APP_PRIVATE_KEY_PATH");
}

#[test]
fn serve_with_a_garbage_pem_should_name_the_key_setting() {
    let output = serve_with(&[
        ("GITHUB_APP_ID", "1234"),
        (
            "GITHUB_APP_PRIVATE_KEY",
            "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n",
        ),
        ("GITHUB_WEBHOOK_SECRET", "secret"),
    ]);
    assert_stops_naming(&output, "GITHUB_APP_PRIVATE_KEY");
    // The key itself is never echoed back.
    assert!(!String::from_utf8_lossy(&output.stderr).contains("bm90IGEga2V5"));
}

#[test]
fn serve_with_zero_workers_should_name_roster_workers() {
    let source = valid_dir_source();
    let output = serve_with(&[("ROSTER_SOURCE", &source), ("ROSTER_WORKERS", "0")]);
    assert_stops_naming(&output, "ROSTER_WORKERS");
}

#[test]
fn serve_with_a_bad_db_max_connections_should_name_it_before_connecting() {
    let source = valid_dir_source();
    // The database is unreachable: the setting is checked before it is tried.
    let output = serve_with(&[
        ("ROSTER_SOURCE", &source),
        ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
        ("ROSTER_DB_MAX_CONNECTIONS", "a few"),
    ]);
    assert_stops_naming(&output, "ROSTER_DB_MAX_CONNECTIONS");
}

#[test]
fn serve_with_a_bad_history_size_should_name_roster_history_max_bytes() {
    let source = valid_dir_source();
    for bad in ["lots", "1.5GiB", "100KiB"] {
        let output = serve_with(&[
            ("ROSTER_SOURCE", &source),
            ("ROSTER_HISTORY_MAX_BYTES", bad),
        ]);
        assert_stops_naming(&output, "ROSTER_HISTORY_MAX_BYTES");
    }
}

#[test]
fn serve_with_a_bad_trust_proxy_should_name_it() {
    let source = valid_dir_source();
    let output = serve_with(&[("ROSTER_SOURCE", &source), ("ROSTER_TRUST_PROXY", "yes")]);
    assert_stops_naming(&output, "ROSTER_TRUST_PROXY");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("must be true or false"), "{stderr}");
}

#[test]
fn serve_with_a_bad_relations_setting_should_name_it_and_help_should_list_it() {
    let source = valid_dir_source();
    let output = serve_with(&[("ROSTER_SOURCE", &source), ("ROSTER_RELATIONS", "strict")]);
    assert_stops_naming(&output, "ROSTER_RELATIONS");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("must be off, warn or require, not \"strict\""),
        "{stderr}"
    );
    let help = Command::new(ROSTER)
        .args(["serve", "--help"])
        .env_clear()
        .output()
        .expect("run the roster binary");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--relations"), "{help}");
    assert!(help.contains("ROSTER_RELATIONS"), "{help}");
    assert!(help.contains("[default: warn]"), "{help}");
}

#[test]
fn serve_with_a_bad_resync_interval_should_name_it() {
    let source = valid_dir_source();
    let output = serve_with(&[
        ("ROSTER_SOURCE", &source),
        ("ROSTER_RESYNC_INTERVAL", "every now and then"),
    ]);
    assert_stops_naming(&output, "ROSTER_RESYNC_INTERVAL");
}

#[test]
fn serve_with_an_unreachable_database_should_name_database_url() {
    let source = valid_dir_source();
    let output = serve_with(&[
        ("ROSTER_SOURCE", &source),
        ("DATABASE_URL", "postgres://roster:hunter2@127.0.0.1:1/x"),
    ]);
    assert_stops_naming(&output, "DATABASE_URL");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "password leaked: {stderr}");
}

#[test]
fn a_flag_should_win_over_its_environment_variable() {
    let source = valid_dir_source();
    let mut cmd = Command::new(ROSTER);
    cmd.args(["serve", "--workers", "0"])
        .env_clear()
        .env("ROSTER_SOURCE", &source)
        .env("ROSTER_WORKERS", "4");
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    let output = cmd.output().expect("run the roster binary");
    assert_stops_naming(&output, "ROSTER_WORKERS");
}

#[test]
fn serve_with_both_project_file_settings_or_a_bad_pattern_should_name_the_setting() {
    let source = valid_dir_source();
    let both = serve_with(&[
        ("ROSTER_SOURCE", &source),
        ("ROSTER_PROJECT_FILE", "project.yaml"),
        (
            "ROSTER_PROJECT_FILES",
            "project.yaml,services/*/project.yaml",
        ),
    ]);
    assert_stops_naming(&both, "ROSTER_PROJECT_FILES");
    assert!(String::from_utf8_lossy(&both.stderr).contains("ROSTER_PROJECT_FILE;"));
    for bad in [
        "services/?/project.yaml",
        "{a,b}.yaml",
        "../project.yaml",
        "services/**",
    ] {
        let output = serve_with(&[("ROSTER_SOURCE", &source), ("ROSTER_PROJECT_FILES", bad)]);
        assert_stops_naming(&output, "ROSTER_PROJECT_FILES");
    }
    // The GitHub source refuses a bad pattern too.
    let github = serve_with(&[("ROSTER_PROJECT_FILES", "services/[ab]/project.yaml")]);
    assert_stops_naming(&github, "ROSTER_PROJECT_FILES");
}

#[test]
fn serve_help_should_hide_every_secret_setting_the_environment_holds() {
    let secrets = [
        ("DATABASE_URL", "postgres://u:hunter2-db@h/d"),
        ("GITHUB_WEBHOOK_SECRET", "hunter2-webhook"),
        ("ROSTER_API_TOKEN", "hunter2-token"),
        ("ROSTER_NOTIFY_SECRET", "hunter2-notify-secret"),
        ("ROSTER_SECRET_KEY", "hunter2-key"),
        // A receiver's path often carries its own secret (a chat hook).
        (
            "ROSTER_NOTIFY_URLS",
            "https://hooks.example/services/hunter2-path",
        ),
    ];
    let mut cmd = Command::new(ROSTER);
    cmd.args(["serve", "--help"]).env_clear().envs(secrets);
    let output = cmd.output().expect("run the roster binary");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("ROSTER_NOTIFY_URLS"), "{help}");
    assert!(!help.contains("hunter2"), "a secret in --help: {help}");
}

#[test]
fn version_should_name_the_version_and_the_commit_it_was_built_from() {
    let output = Command::new(ROSTER)
        .arg("--version")
        .output()
        .expect("roster --version runs");
    assert!(output.status.success(), "{output:?}");
    let line = String::from_utf8_lossy(&output.stdout);
    let expected_start = format!("roster {} (revision ", env!("CARGO_PKG_VERSION"));
    let revision = line
        .trim()
        .strip_prefix(&expected_start)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line:?} does not start with {expected_start:?}"));
    // The commit of this checkout (build.rs reads .git), or `unknown`.
    assert!(
        revision == "unknown"
            || (revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit())),
        "{line:?}"
    );
    // Built by this `cargo test` from this checkout: the commit git names
    // (build.rs watches HEAD, so a new commit rebuilds the binary).
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Ok(head) = head {
        let head = String::from_utf8_lossy(&head.stdout);
        if head.trim().len() == 40 && std::env::var_os("ROSTER_REVISION").is_none() {
            assert_eq!(revision, head.trim(), "{line:?}");
        }
    }
}
