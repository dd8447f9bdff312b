use super::*;
use clap::Parser;
use secrecy::ExposeSecret;

mod github_app;

#[derive(Parser)]
struct TestCli {
    #[command(flatten)]
    serve: ServeArgs,
}

// A real 2048-bit RSA key made for these tests only.
const TEST_KEY: &str = include_str!("../../tests/fixtures/test-app-key.pem");

fn parse(args: &[&str]) -> Result<Settings, ConfigError> {
    let mut argv = vec!["roster"];
    argv.extend_from_slice(args);
    match TestCli::try_parse_from(argv) {
        Ok(cli) => cli.serve.validate(),
        Err(e) => panic!("clap rejected test args: {e}"),
    }
}

fn err(args: &[&str]) -> ConfigError {
    match parse(args) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e,
    }
}

fn here() -> String {
    format!("dir:{}", env!("CARGO_MANIFEST_DIR"))
}

fn app_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--github-app-id",
        "42",
        "--github-app-private-key",
        TEST_KEY,
        "--github-webhook-secret",
        "s3cret",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn defaults_should_apply_with_only_a_dir_source() {
    let s = parse(&["--source", &here()]).unwrap();
    // Flags fall back to the environment, and the test script sets DATABASE_URL.
    let from_env = std::env::var("DATABASE_URL").is_ok_and(|v| !v.is_empty());
    assert_eq!(s.database_url.is_some(), from_env);
    assert_eq!(s.data_dir, PathBuf::from("./.roster"));
    assert_eq!(s.listen, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(
        s.source,
        SourceSetting::Dir(env!("CARGO_MANIFEST_DIR").into())
    );
    assert!(s.github.is_none());
    assert_eq!(s.project_file(), "project.yaml");
    assert_eq!(s.resync_interval, Duration::from_secs(3600));
    assert_eq!(s.workers, 8);
    assert_eq!(s.batch_size, 100);
    assert!(s.api_token.is_none());
    assert_eq!(s.log_format, LogFormat::Text);
    assert_eq!(s.max_removals, MaxRemovals::Default);
    assert!(!s.trust_proxy);
    assert_eq!(s.webhook_concurrency, 32);
    assert_eq!(s.delivery_retention, Duration::from_secs(7 * 24 * 3600));
}

#[test]
fn no_source_and_no_app_should_mean_github_for_setup_mode() {
    let s = parse(&[]).expect("valid");
    assert_eq!(s.source, SourceSetting::Github);
    assert!(s.github.is_none());
}

#[test]
fn github_source_without_an_app_should_mean_setup_mode() {
    let s = parse(&["--source", "github"]).expect("valid");
    assert_eq!(s.source, SourceSetting::Github);
    assert!(s.github.is_none());
}

#[test]
fn dir_source_of_a_missing_folder_should_name_roster_source() {
    let e = err(&["--source", "dir:/no/such/folder/anywhere"]);
    assert_eq!(e.setting, "ROSTER_SOURCE");
    assert!(e.message.contains("/no/such/folder/anywhere"), "{e}");
}

#[test]
fn unknown_source_kind_should_be_rejected() {
    assert_eq!(err(&["--source", "gitlab"]).setting, "ROSTER_SOURCE");
}

#[test]
fn database_url_should_be_postgres() {
    let here = here();
    let e = err(&["--source", &here, "--database-url", "mysql://x/y"]);
    assert_eq!(e.setting, "DATABASE_URL");
    let s = parse(&["--source", &here, "--database-url", "postgresql://u@h/db"]).unwrap();
    assert_eq!(
        s.database_url.unwrap().expose_secret(),
        "postgresql://u@h/db"
    );
}

#[test]
fn bad_listen_address_should_name_roster_listen() {
    let here = here();
    assert_eq!(
        err(&["--source", &here, "--listen", "localhost"]).setting,
        "ROSTER_LISTEN"
    );
    let s = parse(&["--source", &here, "--listen", "0.0.0.0:9000"]).unwrap();
    assert_eq!(s.listen.port(), 9000);
}

#[test]
fn resync_interval_should_parse_human_durations_of_at_least_a_second() {
    let here = here();
    let s = parse(&["--source", &here, "--resync-interval", "15m"]).unwrap();
    assert_eq!(s.resync_interval, Duration::from_secs(900));
    for bad in ["soon", "500ms", "0s", ""] {
        assert_eq!(
            err(&["--source", &here, "--resync-interval", bad]).setting,
            "ROSTER_RESYNC_INTERVAL",
            "{bad:?}"
        );
    }
}

#[test]
fn lease_should_default_to_a_minute_and_take_at_least_a_second() {
    let here = here();
    let s = parse(&["--source", &here]).unwrap();
    assert_eq!(s.lease, crate::controller::DEFAULT_LEASE);
    let s = parse(&["--source", &here, "--lease", "3s"]).unwrap();
    assert_eq!(s.lease, Duration::from_secs(3));
    for bad in ["soon", "500ms", "0s"] {
        assert_eq!(
            err(&["--source", &here, "--lease", bad]).setting,
            "ROSTER_LEASE",
            "{bad:?}"
        );
    }
}

#[test]
fn workers_should_be_between_1_and_256() {
    let here = here();
    for bad in ["0", "257", "-1", "many"] {
        assert_eq!(
            err(&["--source", &here, &format!("--workers={bad}")]).setting,
            "ROSTER_WORKERS"
        );
    }
    let s = parse(&["--source", &here, "--workers", "256"]).unwrap();
    assert_eq!(s.workers, 256);
}

#[test]
fn batch_size_should_be_between_1_and_100() {
    let here = here();
    for bad in ["0", "101", "-1", "all"] {
        let e = err(&["--source", &here, &format!("--batch-size={bad}")]);
        assert_eq!(e.setting, "ROSTER_BATCH_SIZE", "{bad:?}");
        assert!(e.message.contains("from 1 to 100"), "{e}");
    }
    let s = parse(&["--source", &here, "--batch-size", "1"]).unwrap();
    assert_eq!(s.batch_size, 1);
    let s = parse(&["--source", &here, "--batch-size", " 100 "]).unwrap();
    assert_eq!(s.batch_size, 100);
}

#[test]
fn webhook_concurrency_should_be_between_1_and_256() {
    let here = here();
    for bad in ["0", "257", "-1", "many", ""] {
        assert_eq!(
            err(&["--source", &here, &format!("--webhook-concurrency={bad}")]).setting,
            "ROSTER_WEBHOOK_CONCURRENCY",
            "{bad:?}"
        );
    }
    let s = parse(&["--source", &here, "--webhook-concurrency", "2"]).unwrap();
    assert_eq!(s.webhook_concurrency, 2);
}

#[test]
fn long_polls_should_default_to_1000_and_refuse_nonsense() {
    let here = here();
    assert_eq!(parse(&["--source", &here]).unwrap().long_polls, 1000);
    for bad in ["0", "100001", "-5", "lots", "", "1.5"] {
        let error = err(&["--source", &here, &format!("--long-polls={bad}")]);
        assert_eq!(error.setting, "ROSTER_LONG_POLLS", "{bad:?}");
        assert!(
            error.message.ends_with("must be a number from 1 to 100000"),
            "{error}"
        );
    }
    let s = parse(&["--source", &here, "--long-polls", " 50 "]).unwrap();
    assert_eq!(s.long_polls, 50);
}

#[test]
fn delivery_retention_should_parse_human_durations_of_at_least_3_days() {
    let here = here();
    let s = parse(&["--source", &here, "--delivery-retention", "72h"]).unwrap();
    assert_eq!(s.delivery_retention, Duration::from_secs(3 * 24 * 3600));
    let s = parse(&["--source", &here, "--delivery-retention", "30d"]).unwrap();
    assert_eq!(s.delivery_retention, Duration::from_secs(30 * 24 * 3600));
    for bad in ["soon", "2d", "71h", "0s", "", "101y"] {
        let e = err(&["--source", &here, &format!("--delivery-retention={bad}")]);
        assert_eq!(e.setting, "ROSTER_DELIVERY_RETENTION", "{bad:?}");
    }
    let e = err(&["--source", &here, "--delivery-retention", "1d"]);
    assert_eq!(
        e.to_string(),
        "ROSTER_DELIVERY_RETENTION: must be at least 3d: the recovery of missed deliveries reads the last 3 days"
    );
}

#[test]
fn log_format_should_be_text_or_json() {
    let here = here();
    let s = parse(&["--source", &here, "--log-format", "json"]).unwrap();
    assert_eq!(s.log_format, LogFormat::Json);
    assert_eq!(
        err(&["--source", &here, "--log-format", "xml"]).setting,
        "ROSTER_LOG_FORMAT"
    );
}

#[test]
fn trust_proxy_should_be_true_or_false() {
    let here = here();
    let s = parse(&["--source", &here, "--trust-proxy", "true"]).unwrap();
    assert!(s.trust_proxy);
    for off in ["false", ""] {
        let s = parse(&["--source", &here, &format!("--trust-proxy={off}")]).unwrap();
        assert!(!s.trust_proxy, "{off:?}");
    }
    for bad in ["yes", "1", "TRUE ish"] {
        let e = err(&["--source", &here, &format!("--trust-proxy={bad}")]);
        assert_eq!(e.setting, "ROSTER_TRUST_PROXY", "{bad:?}");
        assert!(e.message.contains("true or false"), "{e}");
    }
}

#[test]
fn project_file_should_stay_inside_the_repository() {
    let here = here();
    for bad in ["/etc/passwd", "../x.yaml", ""] {
        assert_eq!(
            err(&["--source", &here, "--project-file", bad]).setting,
            "ROSTER_PROJECT_FILE"
        );
    }
    let s = parse(&["--source", &here, "--project-file", ".github/project.yaml"]).unwrap();
    assert_eq!(s.project_file(), ".github/project.yaml");
}

#[test]
fn project_files_and_its_alias_should_not_be_set_together() {
    let here = here();
    let e = err(&[
        "--source",
        &here,
        "--project-file",
        "project.yaml",
        "--project-files",
        "project.yaml",
    ]);
    assert_eq!(e.setting, "ROSTER_PROJECT_FILES");
    assert!(e.message.contains("ROSTER_PROJECT_FILE;"), "{e}");
}

#[test]
fn a_bad_pattern_should_name_its_setting() {
    let here = here();
    let e = err(&["--source", &here, "--project-files", "a.yaml,svc/?.yaml"]);
    assert_eq!(e.setting, "ROSTER_PROJECT_FILES");
    assert!(e.message.contains("`?` is not supported"), "{e}");
    let e = err(&["--source", &here, "--project-file", "a.yaml,b.yaml"]);
    assert_eq!(e.setting, "ROSTER_PROJECT_FILE");
    let s = parse(&["--source", &here]).unwrap();
    assert_eq!(s.project_files.to_string(), "project.yaml");
    // Empty counts as unset, as for the other settings.
    let s = parse(&["--source", &here, "--project-files", ""]).unwrap();
    assert_eq!(s.project_files.to_string(), "project.yaml");
}

#[test]
fn empty_api_token_should_count_as_unset() {
    let here = here();
    let s = parse(&["--source", &here, "--api-token", ""]).unwrap();
    assert!(s.api_token.is_none());
    let s = parse(&["--source", &here, "--api-token", "t0k"]).unwrap();
    assert_eq!(s.api_token.unwrap().expose_secret(), "t0k");
}

#[test]
fn max_removals_should_accept_a_count_or_a_percentage() {
    let here = here();
    let s = parse(&["--source", &here, "--max-removals", "25"]).unwrap();
    assert_eq!(s.max_removals, MaxRemovals::Count(25));
    let s = parse(&["--source", &here, "--max-removals", "15%"]).unwrap();
    assert_eq!(s.max_removals, MaxRemovals::Percent(15));
    for bad in ["lots", "101%", "-3", "%"] {
        assert_eq!(
            err(&["--source", &here, &format!("--max-removals={bad}")]).setting,
            "ROSTER_MAX_REMOVALS"
        );
    }
}

#[test]
fn default_max_removals_should_be_the_larger_of_10_and_10_percent() {
    assert_eq!(MaxRemovals::Default.limit(0), 10);
    assert_eq!(MaxRemovals::Default.limit(50), 10);
    assert_eq!(MaxRemovals::Default.limit(100), 10);
    assert_eq!(MaxRemovals::Default.limit(250), 25);
    assert_eq!(MaxRemovals::Count(3).limit(1000), 3);
    assert_eq!(MaxRemovals::Percent(15).limit(200), 30);
    assert_eq!(MaxRemovals::Percent(15).limit(3), 0);
}

#[test]
fn secrets_should_not_show_in_debug_output() {
    let s = parse(&app_args(&["--api-token", "t0k-visible?"])).unwrap();
    let debug = format!("{s:?}");
    assert!(!debug.contains("t0k-visible?"));
    assert!(!debug.contains("s3cret"));
    assert!(!debug.contains("PRIVATE KEY"));
}

#[test]
fn defaults_should_be_the_constants_of_what_they_configure() {
    assert_eq!(duration_text(Duration::from_secs(3600)), "1h");
    assert_eq!(duration_text(Duration::from_secs(7 * 24 * 3600)), "7d");
    assert_eq!(duration_text(Duration::from_secs(90)), "90s");
    assert_eq!(duration_text(Duration::from_secs(120)), "2m");
    let s = parse(&["--source", &here()]).unwrap();
    assert_eq!(s.resync_interval, DEFAULT_RESYNC_INTERVAL);
    assert_eq!(s.workers, DEFAULT_WORKERS);
    assert_eq!(s.batch_size, DEFAULT_BATCH_SIZE);
    assert_eq!(s.webhook_concurrency, DEFAULT_CONCURRENCY);
    assert_eq!(s.delivery_retention, DEFAULT_RETENTION);
    assert_eq!(s.lease, DEFAULT_LEASE);
}

#[test]
fn checks_should_default_to_all_and_name_roster_checks_when_wrong() {
    use crate::checks::ChecksMode;
    let here = here();
    assert_eq!(parse(&["--source", &here]).unwrap().checks, ChecksMode::All);
    let s = parse(&["--source", &here, "--checks", "pull_requests"]).unwrap();
    assert_eq!(s.checks, ChecksMode::PullRequests);
    let e = err(&["--source", &here, "--checks", "some"]);
    assert_eq!(
        e.to_string(),
        "ROSTER_CHECKS: must be all, pull_requests or off, not \"some\""
    );
}

#[test]
fn owners_should_default_to_warn_and_name_roster_owners_when_wrong() {
    use crate::directory::OwnersMode;
    let here = here();
    assert_eq!(
        parse(&["--source", &here]).unwrap().owners,
        OwnersMode::Warn
    );
    let s = parse(&["--source", &here, "--owners", "require"]).unwrap();
    assert_eq!(s.owners, OwnersMode::Require);
    let e = err(&["--source", &here, "--owners", "strict"]);
    assert_eq!(
        e.to_string(),
        "ROSTER_OWNERS: must be off, warn or require, not \"strict\""
    );
}

#[test]
fn relations_should_default_to_warn_and_name_roster_relations_when_wrong() {
    use crate::project::relations::RelationsMode;
    let here = here();
    assert_eq!(
        parse(&["--source", &here]).unwrap().relations,
        RelationsMode::Warn
    );
    let s = parse(&["--source", &here, "--relations", "require"]).unwrap();
    assert_eq!(s.relations, RelationsMode::Require);
    let off = parse(&["--source", &here, "--relations", "off"]).unwrap();
    assert_eq!(off.relations, RelationsMode::Off);
    let e = err(&["--source", &here, "--relations", "strict"]);
    assert_eq!(
        e.to_string(),
        "ROSTER_RELATIONS: must be off, warn or require, not \"strict\""
    );
}

#[test]
fn db_max_connections_should_default_to_one_total_and_refuse_what_cannot_work() {
    let s = parse(&["--source", &here()]).expect("valid");
    let from_env = std::env::var("ROSTER_DB_MAX_CONNECTIONS").is_ok_and(|v| !v.is_empty());
    if !from_env {
        assert_eq!(s.db_max_connections, crate::db::DEFAULT_MAX_CONNECTIONS);
    }
    let s = parse(&["--source", &here(), "--db-max-connections", "8"]).expect("valid");
    assert_eq!(s.db_max_connections, 8);
    assert_eq!(
        crate::db::shared_connections(8),
        5,
        "3 are the intake's own"
    );
    let s = parse(&["--source", &here(), "--db-max-connections="]).expect("empty is unset");
    assert_eq!(s.db_max_connections, crate::db::DEFAULT_MAX_CONNECTIONS);
    for bad in ["0", "7", "10001", "-1", "twenty", "2.5", "1e3"] {
        let flag = format!("--db-max-connections={bad}");
        let e = err(&["--source", &here(), &flag]);
        assert_eq!(e.setting, "ROSTER_DB_MAX_CONNECTIONS", "{bad:?}: {e}");
        assert!(e.message.contains("from 8 to 10000"), "{bad:?}: {e}");
        assert!(e.message.contains(&format!("{bad:?}")), "{bad:?}: {e}");
    }
}
