//! Settings of `roster serve` and `roster migrate`: read from flags or
//! environment variables (the flag wins), then checked once at start so a
//! misconfiguration stops the server with one line naming the setting.
//!
//! Clap only collects raw text ([`ServeArgs`]); every value is parsed in
//! [`ServeArgs::validate`] so that all errors share the `SETTING: message`
//! shape instead of clap's multi-line usage errors.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use secrecy::{ExposeSecret, SecretString};
use url::Url;

/// Raw database settings, shared by `serve` and `migrate`.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL; unset: a private PostgreSQL under ROSTER_DATA_DIR.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where the private database (and other local state) lives.
    #[arg(long, env = "ROSTER_DATA_DIR", default_value = "./.roster")]
    pub data_dir: PathBuf,
}

/// Validated database settings.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// `None` means: start the embedded PostgreSQL under `data_dir`.
    pub database_url: Option<SecretString>,
    pub data_dir: PathBuf,
}

impl DatabaseArgs {
    /// Checks the URL scheme; the server itself is only reached later.
    pub fn validate(self) -> Result<DatabaseSettings, ConfigError> {
        let database_url = match non_empty(self.database_url) {
            None => None,
            Some(raw) => {
                let scheme_ok = raw.starts_with("postgres://") || raw.starts_with("postgresql://");
                if !scheme_ok {
                    return Err(ConfigError::new(
                        "DATABASE_URL",
                        "must start with postgres:// or postgresql://",
                    ));
                }
                if Url::parse(&raw).is_err() {
                    return Err(ConfigError::new("DATABASE_URL", "is not a valid URL"));
                }
                Some(SecretString::from(raw))
            }
        };
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::new("ROSTER_DATA_DIR", "must not be empty"));
        }
        Ok(DatabaseSettings {
            database_url,
            data_dir: self.data_dir,
        })
    }
}

/// Raw flags and environment variables of `roster serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// Address to listen on.
    #[arg(long, env = "ROSTER_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// The GitHub App's id; setting it configures the App.
    #[arg(long, env = "GITHUB_APP_ID")]
    pub github_app_id: Option<String>,

    /// The App's private key (PEM text).
    #[arg(
        long,
        env = "GITHUB_APP_PRIVATE_KEY",
        hide_env_values = true,
        allow_hyphen_values = true
    )]
    pub github_app_private_key: Option<String>,

    /// Path of a file holding the App's private key (PEM).
    #[arg(long, env = "GITHUB_APP_PRIVATE_KEY_PATH")]
    pub github_app_private_key_path: Option<PathBuf>,

    /// Secret GitHub signs webhook deliveries with.
    #[arg(long, env = "GITHUB_WEBHOOK_SECRET", hide_env_values = true)]
    pub github_webhook_secret: Option<String>,

    /// REST base URL (GitHub Enterprise Server, tests).
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    pub github_api_url: String,

    /// GraphQL URL; derived from GITHUB_API_URL when unset.
    #[arg(long, env = "GITHUB_GRAPHQL_URL")]
    pub github_graphql_url: Option<String>,

    /// `github` (the App) or `dir:PATH` (sub-folders stand for repositories).
    #[arg(long, env = "ROSTER_SOURCE")]
    pub source: Option<String>,

    /// Path of the project file inside a repository.
    #[arg(long, env = "ROSTER_PROJECT_FILE", default_value = "project.yaml")]
    pub project_file: String,

    /// Period of the org-wide listing (`30s`, `15m`, `1h`).
    #[arg(long, env = "ROSTER_RESYNC_INTERVAL", default_value = "1h")]
    pub resync_interval: String,

    /// Concurrent reconcile workers per replica.
    #[arg(long, env = "ROSTER_WORKERS", default_value = "8")]
    pub workers: String,

    /// Bearer token for the write API; unset: the write API answers 403.
    #[arg(long, env = "ROSTER_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,

    /// `text` or `json`.
    #[arg(long, env = "ROSTER_LOG_FORMAT", default_value = "text")]
    pub log_format: String,

    /// Deletion guard bound per listing period: a count (`25`) or a
    /// percentage (`15%`); default 10 or 10 %, the larger.
    #[arg(long, env = "ROSTER_MAX_REMOVALS")]
    pub max_removals: Option<String>,

    /// Length of a worker's claim on a repository (default 60s). Hidden:
    /// only tests that crash a replica need it shorter, so they do not
    /// wait a minute for the claim to run out.
    #[arg(long, env = "ROSTER_LEASE", hide = true)]
    pub lease: Option<String>,
}

/// Where repositories come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSetting {
    /// The GitHub App's installations.
    Github,
    /// A local folder whose sub-folders stand for repositories.
    Dir(PathBuf),
}

/// Everything needed to talk to GitHub as an App.
#[derive(Debug, Clone)]
pub struct GithubAppSettings {
    pub app_id: u64,
    /// PEM text, already checked to be an RSA private key.
    pub private_key: SecretString,
    pub webhook_secret: SecretString,
    pub api_url: Url,
    pub graphql_url: Url,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Bound of the deletion guard per installation and listing period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxRemovals {
    /// 10 repositories or 10 % of the installation, whichever is larger.
    #[default]
    Default,
    Count(u32),
    /// Percentage (0..=100) of the installation's repositories.
    Percent(u32),
}

impl MaxRemovals {
    /// How many removals one listing period may make in an installation
    /// with `repos_in_installation` repositories; more than this are held.
    pub fn limit(&self, repos_in_installation: usize) -> usize {
        let percent_of = |p: u32| repos_in_installation.saturating_mul(p as usize) / 100;
        match *self {
            MaxRemovals::Default => percent_of(10).max(10),
            MaxRemovals::Count(n) => n as usize,
            MaxRemovals::Percent(p) => percent_of(p),
        }
    }
}

impl std::str::FromStr for MaxRemovals {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let raw = raw.trim();
        if let Some(number) = raw.strip_suffix('%') {
            let p: u32 = number
                .trim()
                .parse()
                .map_err(|_| format!("{raw:?} is not a percentage like 15%"))?;
            if p > 100 {
                return Err(format!("{raw:?} is more than 100%"));
            }
            Ok(MaxRemovals::Percent(p))
        } else {
            raw.parse().map(MaxRemovals::Count).map_err(|_| {
                format!("{raw:?} is neither a count like 25 nor a percentage like 15%")
            })
        }
    }
}

/// Validated settings of `roster serve`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None`: start the embedded PostgreSQL under `data_dir`.
    pub database_url: Option<SecretString>,
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub source: SourceSetting,
    /// `Some` when GITHUB_APP_ID is set.
    pub github: Option<GithubAppSettings>,
    pub project_file: String,
    pub resync_interval: Duration,
    pub workers: usize,
    pub api_token: Option<SecretString>,
    pub log_format: LogFormat,
    pub max_removals: MaxRemovals,
    /// Length of a worker's claim (hidden `ROSTER_LEASE`, default
    /// [`crate::app::LEASE`]).
    pub lease: Duration,
}

/// A setting that is missing or wrong; shown as `SETTING: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {message}")]
pub struct ConfigError {
    /// The environment variable name of the setting.
    pub setting: &'static str,
    pub message: String,
}

impl ConfigError {
    pub fn new(setting: &'static str, message: impl Into<String>) -> Self {
        ConfigError {
            setting,
            message: message.into(),
        }
    }
}

impl ServeArgs {
    /// Parses every raw value and applies the rules between settings.
    pub fn validate(self) -> Result<Settings, ConfigError> {
        let database = self.database.validate()?;
        let listen = parse_listen(&self.listen)?;
        let github = github_app(
            non_empty(self.github_app_id),
            non_empty(self.github_app_private_key),
            self.github_app_private_key_path
                .filter(|p| !p.as_os_str().is_empty()),
            non_empty(self.github_webhook_secret),
            &self.github_api_url,
            non_empty(self.github_graphql_url),
        )?;
        let source = parse_source(non_empty(self.source), github.is_some())?;
        let project_file = parse_project_file(&self.project_file)?;
        let resync_interval = parse_resync_interval(&self.resync_interval)?;
        let workers = parse_workers(&self.workers)?;
        let log_format = parse_log_format(&self.log_format)?;
        let max_removals = match non_empty(self.max_removals) {
            None => MaxRemovals::Default,
            Some(raw) => raw
                .parse()
                .map_err(|m| ConfigError::new("ROSTER_MAX_REMOVALS", m))?,
        };
        let lease = match non_empty(self.lease) {
            None => crate::app::LEASE,
            Some(raw) => parse_lease(&raw)?,
        };
        Ok(Settings {
            database_url: database.database_url,
            data_dir: database.data_dir,
            listen,
            source,
            github,
            project_file,
            resync_interval,
            workers,
            api_token: non_empty(self.api_token).map(SecretString::from),
            log_format,
            max_removals,
            lease,
        })
    }
}

/// Treats an empty value like an unset one (`FOO=` in a shell or a unit file).
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

fn parse_listen(raw: &str) -> Result<SocketAddr, ConfigError> {
    raw.trim().parse().map_err(|_| {
        ConfigError::new(
            "ROSTER_LISTEN",
            format!("{raw:?} is not an address like 127.0.0.1:8080"),
        )
    })
}

fn github_app(
    app_id: Option<String>,
    key_inline: Option<String>,
    key_path: Option<PathBuf>,
    webhook_secret: Option<String>,
    api_url: &str,
    graphql_url: Option<String>,
) -> Result<Option<GithubAppSettings>, ConfigError> {
    let Some(app_id) = app_id else {
        return Ok(None);
    };
    let app_id: u64 = app_id
        .trim()
        .parse()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| ConfigError::new("GITHUB_APP_ID", "must be the App's numeric id"))?;
    let private_key = load_private_key(key_inline, key_path)?;
    let webhook_secret = webhook_secret.ok_or_else(|| {
        ConfigError::new(
            "GITHUB_WEBHOOK_SECRET",
            "required when a GitHub App is configured (GITHUB_APP_ID)",
        )
    })?;
    let api_url = parse_http_url("GITHUB_API_URL", api_url)?;
    let graphql_url = match graphql_url {
        Some(raw) => parse_http_url("GITHUB_GRAPHQL_URL", &raw)?,
        None => derive_graphql_url(&api_url),
    };
    Ok(Some(GithubAppSettings {
        app_id,
        private_key,
        webhook_secret: SecretString::from(webhook_secret),
        api_url,
        graphql_url,
    }))
}

/// Reads the App key and checks it is an RSA private key, so a bad key stops
/// the server at start rather than at the first GitHub call.
fn load_private_key(
    inline: Option<String>,
    path: Option<PathBuf>,
) -> Result<SecretString, ConfigError> {
    let (setting, pem) = match (inline, path) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                "GITHUB_APP_PRIVATE_KEY",
                "set either GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH, not both",
            ))
        }
        (None, None) => {
            return Err(ConfigError::new(
                "GITHUB_APP_PRIVATE_KEY",
                "required when a GitHub App is configured (GITHUB_APP_ID); \
                 set it to the PEM text or set GITHUB_APP_PRIVATE_KEY_PATH",
            ))
        }
        // Environment variables often carry the PEM with literal `\n`.
        (Some(inline), None) if !inline.contains('\n') => {
            ("GITHUB_APP_PRIVATE_KEY", inline.replace("\\n", "\n"))
        }
        (Some(inline), None) => ("GITHUB_APP_PRIVATE_KEY", inline),
        (None, Some(path)) => {
            let pem = std::fs::read_to_string(&path).map_err(|e| {
                ConfigError::new(
                    "GITHUB_APP_PRIVATE_KEY_PATH",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            ("GITHUB_APP_PRIVATE_KEY_PATH", pem)
        }
    };
    check_rsa_key(setting, &pem)?;
    Ok(SecretString::from(pem))
}

fn check_rsa_key(setting: &'static str, pem: &str) -> Result<(), ConfigError> {
    let bad = |e: jsonwebtoken::errors::Error| {
        ConfigError::new(
            setting,
            format!("not a PEM-encoded RSA private key (as GitHub issues for an App): {e}"),
        )
    };
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(bad)?;
    // Decoding the PEM does not parse the key itself; signing does.
    let claims = serde_json::json!({ "iss": "roster-config-check" });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &claims,
        &key,
    )
    .map(|_| ())
    .map_err(bad)
}

fn parse_http_url(setting: &'static str, raw: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(raw.trim())
        .map_err(|e| ConfigError::new(setting, format!("{raw:?} is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ConfigError::new(
            setting,
            format!("{raw:?} must be an http or https URL"),
        ));
    }
    Ok(url)
}

/// GitHub.com serves GraphQL at `/graphql`; Enterprise Server serves REST at
/// `/api/v3` and GraphQL at `/api/graphql`; anything else (a test double)
/// gets `<api>/graphql`.
pub fn derive_graphql_url(api_url: &Url) -> Url {
    let path = api_url.path().trim_end_matches('/');
    let graphql_path = match path.strip_suffix("/api/v3") {
        Some(prefix) => format!("{prefix}/api/graphql"),
        None => format!("{path}/graphql"),
    };
    let mut url = api_url.clone();
    url.set_path(&graphql_path);
    url.set_query(None);
    url
}

fn parse_source(raw: Option<String>, app_configured: bool) -> Result<SourceSetting, ConfigError> {
    let Some(raw) = raw else {
        return if app_configured {
            Ok(SourceSetting::Github)
        } else {
            Err(ConfigError::new(
                "ROSTER_SOURCE",
                "set dir:PATH or configure a GitHub App (GITHUB_APP_ID)",
            ))
        };
    };
    let raw = raw.trim();
    if raw == "github" {
        return if app_configured {
            Ok(SourceSetting::Github)
        } else {
            Err(ConfigError::new(
                "GITHUB_APP_ID",
                "required when ROSTER_SOURCE is github",
            ))
        };
    }
    let Some(path) = raw.strip_prefix("dir:") else {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            format!("{raw:?} is neither github nor dir:PATH"),
        ));
    };
    if path.is_empty() {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            "dir: needs a folder, e.g. dir:examples/org",
        ));
    }
    let path = PathBuf::from(path);
    if !path.is_dir() {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            format!("folder {} does not exist", path.display()),
        ));
    }
    Ok(SourceSetting::Dir(path))
}

fn parse_project_file(raw: &str) -> Result<String, ConfigError> {
    let path = Path::new(raw);
    let escapes = path
        .components()
        .any(|c| !matches!(c, std::path::Component::Normal(_)));
    if raw.trim().is_empty() || escapes {
        return Err(ConfigError::new(
            "ROSTER_PROJECT_FILE",
            format!("{raw:?} must be a relative path inside the repository, like project.yaml"),
        ));
    }
    Ok(raw.to_owned())
}

fn parse_resync_interval(raw: &str) -> Result<Duration, ConfigError> {
    let interval = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            "ROSTER_RESYNC_INTERVAL",
            format!("{raw:?} is not a duration like 30s, 15m or 1h"),
        )
    })?;
    if interval < Duration::from_secs(1) {
        return Err(ConfigError::new(
            "ROSTER_RESYNC_INTERVAL",
            "must be at least 1s",
        ));
    }
    Ok(interval)
}

/// At least 1s: the lease is renewed every third of it, and a shorter one
/// would be lost to a slow database round trip.
fn parse_lease(raw: &str) -> Result<Duration, ConfigError> {
    let lease = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            "ROSTER_LEASE",
            format!("{raw:?} is not a duration like 60s"),
        )
    })?;
    if lease < Duration::from_secs(1) {
        return Err(ConfigError::new("ROSTER_LEASE", "must be at least 1s"));
    }
    Ok(lease)
}

fn parse_workers(raw: &str) -> Result<usize, ConfigError> {
    raw.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=256).contains(n))
        .ok_or_else(|| {
            ConfigError::new(
                "ROSTER_WORKERS",
                format!("{raw:?} must be a number from 1 to 256"),
            )
        })
}

fn parse_log_format(raw: &str) -> Result<LogFormat, ConfigError> {
    match raw.trim() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(ConfigError::new(
            "ROSTER_LOG_FORMAT",
            format!("{raw:?} must be text or json"),
        )),
    }
}

impl fmt::Display for SourceSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceSetting::Github => f.write_str("github"),
            SourceSetting::Dir(path) => write!(f, "dir:{}", path.display()),
        }
    }
}

impl GithubAppSettings {
    /// The webhook secret's bytes, for HMAC verification.
    pub fn webhook_secret_bytes(&self) -> &[u8] {
        self.webhook_secret.expose_secret().as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    // A real 2048-bit RSA key made for these tests only.
    const TEST_KEY: &str = include_str!("../tests/fixtures/test-app-key.pem");

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
        assert_eq!(s.project_file, "project.yaml");
        assert_eq!(s.resync_interval, Duration::from_secs(3600));
        assert_eq!(s.workers, 8);
        assert!(s.api_token.is_none());
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!(s.max_removals, MaxRemovals::Default);
    }

    #[test]
    fn no_source_and_no_app_should_name_roster_source() {
        let e = err(&[]);
        assert_eq!(e.setting, "ROSTER_SOURCE");
        assert_eq!(
            e.to_string(),
            "ROSTER_SOURCE: set dir:PATH or configure a GitHub App (GITHUB_APP_ID)"
        );
    }

    #[test]
    fn github_source_without_an_app_should_name_the_app_id() {
        assert_eq!(err(&["--source", "github"]).setting, "GITHUB_APP_ID");
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
            "/tests/fixtures/test-app-key.pem"
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
        assert_eq!(s.lease, crate::app::LEASE);
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
    fn project_file_should_stay_inside_the_repository() {
        let here = here();
        for bad in ["/etc/passwd", "../x.yaml", ""] {
            assert_eq!(
                err(&["--source", &here, "--project-file", bad]).setting,
                "ROSTER_PROJECT_FILE"
            );
        }
        let s = parse(&["--source", &here, "--project-file", ".github/project.yaml"]).unwrap();
        assert_eq!(s.project_file, ".github/project.yaml");
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
}
