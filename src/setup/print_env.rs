//! `roster setup --print-env`: the stored App as environment lines, for
//! deployments that keep secrets elsewhere (the environment then wins).

use sqlx::PgPool;

use super::key::SecretKey;
use super::store::{self, StoreError, StoredApp};

/// Why nothing was printed.
#[derive(Debug, thiserror::Error)]
pub enum PrintEnvError {
    #[error("no GitHub App is stored: run `roster serve` and open the setup address it logs")]
    NoApp,
    /// A setting is missing or wrong: the setting's name and what.
    #[error("{0}: {1}")]
    Setting(&'static str, String),
}

/// The stored App's lines, read with `key`.
pub async fn render(pool: &PgPool, key: Option<&SecretKey>) -> Result<String, PrintEnvError> {
    let database = |e: sqlx::Error| PrintEnvError::Setting("DATABASE_URL", e.to_string());
    if !store::app_exists(pool).await.map_err(database)? {
        return Err(PrintEnvError::NoApp);
    }
    let key = key.ok_or_else(|| {
        PrintEnvError::Setting(
            "ROSTER_SECRET_KEY",
            "required to read the GitHub App stored by setup".into(),
        )
    })?;
    match store::load_app(pool, key).await {
        Ok(Some(app)) => Ok(lines(&app)),
        Ok(None) => Err(PrintEnvError::NoApp),
        Err(StoreError::Db(e)) => Err(database(e)),
        Err(e) => Err(PrintEnvError::Setting("ROSTER_SECRET_KEY", e.to_string())),
    }
}

/// `KEY=value` lines Roster reads back: the PEM's newlines as `\n`.
pub fn lines(app: &StoredApp) -> String {
    format!(
        "GITHUB_APP_ID={}\nGITHUB_APP_PRIVATE_KEY={}\nGITHUB_WEBHOOK_SECRET={}\n",
        app.app_id,
        app.pem
            .trim_end()
            .replace("\r\n", "\n")
            .replace('\n', "\\n"),
        app.webhook_secret,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pem_should_fit_on_one_line() {
        let app = StoredApp {
            app_id: 7,
            slug: "roster".into(),
            html_url: "https://github.com/apps/roster".into(),
            pem: "-----BEGIN RSA PRIVATE KEY-----\nAAA\n-----END RSA PRIVATE KEY-----\n".into(),
            webhook_secret: "s3cret".into(),
            client_id: "Iv1.x".into(),
            client_secret: "y".into(),
        };
        assert_eq!(
            lines(&app),
            "GITHUB_APP_ID=7\n\
             GITHUB_APP_PRIVATE_KEY=-----BEGIN RSA PRIVATE KEY-----\\nAAA\\n-----END RSA PRIVATE KEY-----\n\
             GITHUB_WEBHOOK_SECRET=s3cret\n"
        );
    }
}
