//! Where the registry lives: `DATABASE_URL`, or a private PostgreSQL
//! under `ROSTER_DATA_DIR`; shared by `serve` and `migrate`.

use std::path::PathBuf;

use clap::Args;
use secrecy::SecretString;
use url::Url;

use super::{non_empty, ConfigError};
use crate::db::{
    DEFAULT_MAX_CONNECTIONS, INTAKE_CONNECTIONS, MAX_MAX_CONNECTIONS, MIN_MAX_CONNECTIONS,
};

/// Raw database settings, shared by `serve` and `migrate`.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL; unset: a private PostgreSQL under ROSTER_DATA_DIR.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Where the private database (and other local state) lives.
    #[arg(long, env = "ROSTER_DATA_DIR", default_value = "./.roster")]
    pub data_dir: PathBuf,

    /// The most PostgreSQL connections this process opens, every pool
    /// together (the webhook intake's writers take 3 of them).
    #[arg(long, env = "ROSTER_DB_MAX_CONNECTIONS", default_value_t = DEFAULT_MAX_CONNECTIONS.to_string())]
    pub db_max_connections: String,
}

/// Validated database settings.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// `None` means: start the embedded PostgreSQL under `data_dir`.
    pub database_url: Option<SecretString>,
    pub data_dir: PathBuf,
    /// `ROSTER_DB_MAX_CONNECTIONS`: what every pool shares.
    pub max_connections: u32,
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
        let max_connections = parse_max_connections(&self.db_max_connections)?;
        Ok(DatabaseSettings {
            database_url,
            data_dir: self.data_dir,
            max_connections,
        })
    }
}

/// `ROSTER_DB_MAX_CONNECTIONS`: a whole number in
/// [`MIN_MAX_CONNECTIONS`]..=[`MAX_MAX_CONNECTIONS`]; fewer could not
/// hold the intake's writers, the `LISTEN` connections and work besides.
pub(super) fn parse_max_connections(raw: &str) -> Result<u32, ConfigError> {
    let wrong = || {
        ConfigError::new(
            "ROSTER_DB_MAX_CONNECTIONS",
            format!(
                "must be a whole number from {MIN_MAX_CONNECTIONS} to {MAX_MAX_CONNECTIONS} \
                 (every PostgreSQL connection of this replica: {INTAKE_CONNECTIONS} for the \
                 webhook intake's writers, the rest shared), not {raw:?}"
            ),
        )
    };
    // Empty counts as unset, as for every setting.
    if raw.trim().is_empty() {
        return Ok(DEFAULT_MAX_CONNECTIONS);
    }
    let n: u32 = raw.trim().parse().map_err(|_| wrong())?;
    if (MIN_MAX_CONNECTIONS..=MAX_MAX_CONNECTIONS).contains(&n) {
        Ok(n)
    } else {
        Err(wrong())
    }
}
