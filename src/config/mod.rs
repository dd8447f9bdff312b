//! Settings of `roster serve` and `roster migrate`: read from flags or
//! environment variables (the flag wins), then checked once at start so a
//! misconfiguration stops the server with one line naming the setting.
//!
//! Clap only collects raw text ([`ServeArgs`]); every value is parsed in
//! [`ServeArgs::validate`] so that all errors share the `SETTING: message`
//! shape instead of clap's multi-line usage errors.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use secrecy::SecretString;

mod change_log;
mod database;
mod github_app;
mod parse;
mod setup;
#[cfg(test)]
mod tests;

use crate::controller::{
    DEFAULT_BATCH_SIZE, DEFAULT_LEASE, DEFAULT_RESYNC_INTERVAL, DEFAULT_WORKERS,
};
use crate::intake::admission::DEFAULT_CONCURRENCY;
use crate::intake::retention::DEFAULT_RETENTION;
pub use crate::project::ProjectFiles;
pub use crate::registry::MaxRemovals;
pub use change_log::{redact_url, NotifySettings};
pub use database::{DatabaseArgs, DatabaseSettings};
pub use github_app::{derive_graphql_url, GithubAppSettings};
use parse::{
    duration_text, parse_batch_size, parse_delivery_retention, parse_lease, parse_listen,
    parse_log_format, parse_project_files, parse_resync_interval, parse_source, parse_trust_proxy,
    parse_webhook_concurrency, parse_workers,
};
pub use setup::{derive_web_url, SetupArgs, SetupSettings};

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

    /// Path of the project file inside a repository: one pattern, an
    /// alias of ROSTER_PROJECT_FILES.
    #[arg(long, env = "ROSTER_PROJECT_FILE")]
    pub project_file: Option<String>,

    /// Comma-separated glob patterns of project files (`*` within a
    /// folder, `**` any depth); default `project.yaml`.
    #[arg(long, env = "ROSTER_PROJECT_FILES")]
    pub project_files: Option<String>,

    /// Period of the org-wide listing (`30s`, `15m`, `1h`).
    #[arg(long, env = "ROSTER_RESYNC_INTERVAL", default_value_t = duration_text(DEFAULT_RESYNC_INTERVAL))]
    pub resync_interval: String,

    /// Concurrent reconcile workers per replica.
    #[arg(long, env = "ROSTER_WORKERS", default_value_t = DEFAULT_WORKERS.to_string())]
    pub workers: String,

    /// Most repositories a worker claims and reads from GitHub at once.
    #[arg(long, env = "ROSTER_BATCH_SIZE", default_value_t = DEFAULT_BATCH_SIZE.to_string())]
    pub batch_size: String,

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

    /// `true` behind a reverse proxy that sets `X-Forwarded-For`, `-Host`
    /// and `-Proto`; otherwise (`false`) those headers are ignored.
    #[arg(long, env = "ROSTER_TRUST_PROXY", default_value = "false")]
    pub trust_proxy: String,
    /// Webhook bodies read and verified at once; the rest wait (503 past
    /// 10 s).
    #[arg(long, env = "ROSTER_WEBHOOK_CONCURRENCY", default_value_t = DEFAULT_CONCURRENCY.to_string())]
    pub webhook_concurrency: String,

    /// How long the webhook delivery log keeps a delivery (`7d`, `72h`);
    /// at least 3d.
    #[arg(long, env = "ROSTER_DELIVERY_RETENTION", default_value_t = duration_text(DEFAULT_RETENTION))]
    pub delivery_retention: String,

    /// Which `Roster` check runs are posted on GitHub: `all` (pull
    /// requests and the default branch), `pull_requests`, or `off`.
    #[arg(long, env = "ROSTER_CHECKS", default_value = "all")]
    pub checks: String,

    /// How a project file's `owner` is checked against the organisation's
    /// teams and members: `off`, `warn` (flag unknown owners) or `require`.
    #[arg(long, env = "ROSTER_OWNERS", default_value = "warn")]
    pub owners: String,

    /// How a project file's `depends_on` is checked against the registry:
    /// `off`, `warn` (flag a dependency on no project) or `require`.
    #[arg(long, env = "ROSTER_RELATIONS", default_value = "warn")]
    pub relations: String,

    /// Length of a worker's claim on a repository (default 60s). Hidden:
    /// only tests that crash a replica need it shorter, so they do not
    /// wait a minute for the claim to run out.
    #[arg(long, env = "ROSTER_LEASE", hide = true)]
    pub lease: Option<String>,

    /// How long the change log keeps a change (`90d`, `30d`); at least 1h.
    #[arg(long, env = "ROSTER_HISTORY_RETENTION", default_value = "90d")]
    pub history_retention: String,
    /// How many bytes of changes the change log keeps at most (`1GiB`,
    /// `500MiB`); at least 1MiB.
    #[arg(long, env = "ROSTER_HISTORY_MAX_BYTES", default_value = "1GiB")]
    pub history_max_bytes: String,
    /// Comma-separated URLs that receive every change as a signed POST
    /// (hidden in `--help`: a receiver's path may hold its own secret).
    #[arg(long, env = "ROSTER_NOTIFY_URLS", hide_env_values = true)]
    pub notify_urls: Option<String>,
    /// The HMAC-SHA256 key that signs notifications; required with
    /// ROSTER_NOTIFY_URLS.
    #[arg(long, env = "ROSTER_NOTIFY_SECRET", hide_env_values = true)]
    pub notify_secret: Option<String>,
    /// Long polls of the change feed waiting at once; past it, a poll is
    /// answered at once with what there is.
    #[arg(long, env = "ROSTER_LONG_POLLS", default_value_t = crate::registry::changes::wake::DEFAULT_LONG_POLLS.to_string())]
    pub long_polls: String,

    /// GitHub's web address (where new Apps are registered); derived from
    /// GITHUB_API_URL when unset.
    #[arg(long, env = "GITHUB_URL")]
    pub github_url: Option<String>,
    /// The address GitHub reaches Roster at; pre-fills the setup page.
    #[arg(long, env = "ROSTER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// 64 hex characters that encrypt the App stored by setup; unset
    /// without DATABASE_URL: a key file under ROSTER_DATA_DIR.
    #[arg(long, env = "ROSTER_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
}

/// Where repositories come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSetting {
    /// The GitHub App's installations.
    Github,
    /// A local folder whose sub-folders stand for repositories.
    Dir(PathBuf),
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Validated settings of `roster serve`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None`: start the embedded PostgreSQL under `data_dir`.
    pub database_url: Option<SecretString>,
    pub data_dir: PathBuf,
    /// `ROSTER_DB_MAX_CONNECTIONS`: every pool of the replica together.
    pub db_max_connections: u32,
    pub listen: SocketAddr,
    pub source: SourceSetting,
    /// `Some` when GITHUB_APP_ID is set.
    pub github: Option<GithubAppSettings>,
    /// Where project files lie in a repository (`ROSTER_PROJECT_FILES`).
    pub project_files: ProjectFiles,
    pub resync_interval: Duration,
    pub workers: usize,
    /// Most repositories one worker claims and reads at once.
    pub batch_size: usize,
    pub api_token: Option<SecretString>,
    pub log_format: LogFormat,
    pub max_removals: MaxRemovals,
    /// Whether `X-Forwarded-*` headers describe the client
    /// (`ROSTER_TRUST_PROXY`); off, anyone could write them.
    pub trust_proxy: bool,
    /// Length of a worker's claim (hidden `ROSTER_LEASE`, default
    /// [`DEFAULT_LEASE`]).
    pub lease: Duration,
    /// Webhook bodies read and verified at once.
    pub webhook_concurrency: usize,
    /// How long the delivery log keeps a delivery.
    pub delivery_retention: Duration,
    /// How long the change log keeps a change.
    pub history_retention: Duration,
    /// How many bytes of changes the change log keeps at most.
    pub history_max_bytes: u64,
    /// Where changes are POSTed, and the secret that signs them.
    pub notify: NotifySettings,
    /// Long polls of the change feed waiting at once (`ROSTER_LONG_POLLS`).
    pub long_polls: usize,
    /// Which check runs are posted (`ROSTER_CHECKS`).
    pub checks: crate::checks::ChecksMode,
    /// How owners are checked (`ROSTER_OWNERS`).
    pub owners: crate::directory::OwnersMode,
    /// How dependencies are checked (`ROSTER_RELATIONS`).
    pub relations: crate::project::relations::RelationsMode,
    /// GitHub's addresses and the secret key, for setup and a stored App.
    pub setup: SetupSettings,
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
        let setup = setup::parse(
            non_empty(self.github_url),
            &self.github_api_url,
            non_empty(self.github_graphql_url.clone()),
            non_empty(self.public_url),
            non_empty(self.secret_key),
        )?;
        let github = github_app::from_args(
            non_empty(self.github_app_id),
            non_empty(self.github_app_private_key),
            self.github_app_private_key_path
                .filter(|p| !p.as_os_str().is_empty()),
            non_empty(self.github_webhook_secret),
            &self.github_api_url,
            non_empty(self.github_graphql_url),
        )?;
        let source = parse_source(non_empty(self.source))?;
        let project_files = parse_project_files(self.project_file, non_empty(self.project_files))?;
        let resync_interval = parse_resync_interval(&self.resync_interval)?;
        let workers = parse_workers(&self.workers)?;
        let batch_size = parse_batch_size(&self.batch_size)?;
        let log_format = parse_log_format(&self.log_format)?;
        let max_removals = match non_empty(self.max_removals) {
            None => MaxRemovals::Default,
            Some(raw) => raw
                .parse()
                .map_err(|m| ConfigError::new("ROSTER_MAX_REMOVALS", m))?,
        };
        let trust_proxy = match non_empty(Some(self.trust_proxy)) {
            None => false,
            Some(raw) => parse_trust_proxy(&raw)?,
        };
        let lease = match non_empty(self.lease) {
            None => DEFAULT_LEASE,
            Some(raw) => parse_lease(&raw)?,
        };
        let webhook_concurrency = parse_webhook_concurrency(&self.webhook_concurrency)?;
        let delivery_retention = parse_delivery_retention(&self.delivery_retention)?;
        let history_retention = change_log::parse_history_retention(&self.history_retention)?;
        let history_max_bytes = change_log::parse_history_max_bytes(&self.history_max_bytes)?;
        let notify = change_log::parse_notify(self.notify_urls.as_deref(), self.notify_secret)?;
        let long_polls = parse::parse_long_polls(&self.long_polls)?;
        let checks = match non_empty(Some(self.checks)) {
            None => crate::checks::ChecksMode::default(),
            Some(raw) => raw
                .parse()
                .map_err(|m| ConfigError::new("ROSTER_CHECKS", m))?,
        };
        let owners = match non_empty(Some(self.owners)) {
            None => crate::directory::OwnersMode::default(),
            Some(raw) => raw
                .parse()
                .map_err(|m| ConfigError::new("ROSTER_OWNERS", m))?,
        };
        let relations = match non_empty(Some(self.relations)) {
            None => crate::project::relations::RelationsMode::default(),
            Some(raw) => raw
                .parse()
                .map_err(|m| ConfigError::new("ROSTER_RELATIONS", m))?,
        };
        Ok(Settings {
            database_url: database.database_url,
            data_dir: database.data_dir,
            db_max_connections: database.max_connections,
            listen,
            source,
            github,
            project_files,
            resync_interval,
            workers,
            batch_size,
            api_token: non_empty(self.api_token).map(SecretString::from),
            log_format,
            max_removals,
            trust_proxy,
            lease,
            webhook_concurrency,
            delivery_retention,
            history_retention,
            history_max_bytes,
            notify,
            long_polls,
            checks,
            owners,
            relations,
            setup,
        })
    }
}

impl Settings {
    /// The one project file path, when the patterns are exactly one path
    /// (the GitHub source's only kind), else the patterns as written.
    pub fn project_file(&self) -> String {
        match self.project_files.single_path() {
            Some(path) => path.to_owned(),
            None => self.project_files.to_string(),
        }
    }
}

/// Treats an empty value like an unset one (`FOO=` in a shell or a unit file).
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

impl fmt::Display for SourceSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceSetting::Github => f.write_str("github"),
            SourceSetting::Dir(path) => write!(f, "dir:{}", path.display()),
        }
    }
}
