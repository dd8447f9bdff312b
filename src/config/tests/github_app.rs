//! The GitHub App's settings: id, key, webhook secret and the API URLs.

use super::*;

#[test]
fn an_app_should_default_the_source_to_github_and_derive_graphql() {
    let s = parse(&app_args(&[])).unwrap();
    assert_eq!(s.source, SourceSetting::Github);
    let app = s.github.unwrap();
    assert_eq!(app.app_id, 42);
    assert_eq!(app.webhook_secret_bytes(), b"s3cret");
    assert_eq!(app.api_url.as_str(), "https://api.github.com/");
    assert_eq!(app.graphql_url.as_str(), "https://api.github.com/graphql");
}

#[test]
fn an_app_may_still_use_a_dir_source() {
    let here = here();
    let s = parse(&app_args(&["--source", &here])).unwrap();
    assert!(matches!(s.source, SourceSetting::Dir(_)));
    assert!(s.github.is_some());
}

#[test]
fn graphql_url_should_follow_enterprise_server_layout() {
    let s = parse(&app_args(&[
        "--github-api-url",
        "https://ghe.example.com/api/v3",
    ]))
    .unwrap();
    assert_eq!(
        s.github.unwrap().graphql_url.as_str(),
        "https://ghe.example.com/api/graphql"
    );
}

#[test]
fn graphql_url_of_a_test_double_should_be_api_plus_graphql() {
    let s = parse(&app_args(&["--github-api-url", "http://127.0.0.1:9999/"])).unwrap();
    assert_eq!(
        s.github.unwrap().graphql_url.as_str(),
        "http://127.0.0.1:9999/graphql"
    );
}

#[test]
fn explicit_graphql_url_should_win_over_the_derived_one() {
    let s = parse(&app_args(&["--github-graphql-url", "http://gql.test/q"])).unwrap();
    assert_eq!(s.github.unwrap().graphql_url.as_str(), "http://gql.test/q");
}

#[test]
fn bad_api_url_should_name_github_api_url() {
    assert_eq!(
        err(&app_args(&["--github-api-url", "not a url"])).setting,
        "GITHUB_API_URL"
    );
    assert_eq!(
        err(&app_args(&["--github-api-url", "ftp://x.test/"])).setting,
        "GITHUB_API_URL"
    );
}

#[test]
fn bad_graphql_url_should_name_github_graphql_url() {
    assert_eq!(
        err(&app_args(&["--github-graphql-url", "::"])).setting,
        "GITHUB_GRAPHQL_URL"
    );
}

#[test]
fn app_id_that_is_not_a_number_should_be_rejected() {
    let mut args = app_args(&[]);
    args[1] = "forty-two";
    assert_eq!(err(&args).setting, "GITHUB_APP_ID");
}

#[test]
fn app_without_a_key_should_name_the_key() {
    let e = err(&["--github-app-id", "42", "--github-webhook-secret", "s"]);
    assert_eq!(e.setting, "GITHUB_APP_PRIVATE_KEY");
}

#[test]
fn app_without_a_webhook_secret_should_name_it() {
    let e = err(&[
        "--github-app-id",
        "42",
        "--github-app-private-key",
        TEST_KEY,
    ]);
    assert_eq!(e.setting, "GITHUB_WEBHOOK_SECRET");
}

#[test]
fn unreadable_key_path_should_name_the_path_setting() {
    let e = err(&[
        "--github-app-id",
        "42",
        "--github-app-private-key-path",
        "/no/such/key.pem",
        "--github-webhook-secret",
        "s",
    ]);
    assert_eq!(e.setting, "GITHUB_APP_PRIVATE_KEY_PATH");
    assert!(e.message.contains("/no/such/key.pem"), "{e}");
}

#[test]
fn key_path_should_be_read_and_checked() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/test-app-key.pem"
    );
    let s = parse(&[
        "--github-app-id",
        "42",
        "--github-app-private-key-path",
        path,
        "--github-webhook-secret",
        "s",
    ])
    .unwrap();
    assert_eq!(s.github.unwrap().private_key.expose_secret(), TEST_KEY);
}

#[test]
fn garbage_pem_should_name_the_key_setting() {
    let e = err(&[
        "--github-app-id",
        "42",
        "--github-app-private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
        "--github-webhook-secret",
        "s",
    ]);
    assert_eq!(e.setting, "GITHUB_APP_PRIVATE_KEY");
    let e = err(&[
        "--github-app-id",
        "42",
        "--github-app-private-key",
        "hello",
        "--github-webhook-secret",
        "s",
    ]);
    assert_eq!(e.setting, "GITHUB_APP_PRIVATE_KEY");
}

#[test]
fn key_with_escaped_newlines_should_be_accepted() {
    let escaped = TEST_KEY.trim_end().replace('\n', "\\n");
    let s = parse(&[
        "--github-app-id",
        "42",
        "--github-app-private-key",
        &escaped,
        "--github-webhook-secret",
        "s",
    ])
    .unwrap();
    assert!(s.github.unwrap().private_key.expose_secret().contains('\n'));
}

#[test]
fn both_key_forms_at_once_should_be_rejected() {
    let e = err(&app_args(&["--github-app-private-key-path", "/k.pem"]));
    assert_eq!(e.setting, "GITHUB_APP_PRIVATE_KEY");
}
