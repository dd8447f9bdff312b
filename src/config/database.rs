//! Where the registry lives: `DATABASE_URL`, or a private PostgreSQL
//! under `ROSTER_DATA_DIR`; shared by `serve` and `migrate`.

use std::path::PathBuf;

use clap::Args;
use secrecy::SecretString;
use url::Url;

use super::{non_empty, ConfigError};

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
