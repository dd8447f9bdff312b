//! Settings of setup (registering the App from Roster's own page): GitHub's
//! addresses, which may be set without an App, the public address, and the
//! key that seals the stored App.

use url::Url;

use super::github_app::parse_http_url;
use super::{derive_graphql_url, ConfigError};
use crate::setup::{PublicUrl, SecretKey};

/// GitHub's addresses and what setup needs besides.
#[derive(Debug, Clone)]
pub struct SetupSettings {
    /// GitHub's web address (`GITHUB_URL`): where the new-App page is.
    pub github_url: Url,
    /// REST base (`GITHUB_API_URL`): where the code is exchanged.
    pub api_url: Url,
    /// GraphQL URL, for the App once stored.
    pub graphql_url: Url,
    /// `ROSTER_PUBLIC_URL`: pre-fills the setup page.
    pub public_url: Option<PublicUrl>,
    /// `ROSTER_SECRET_KEY`, when set.
    pub secret_key: Option<SecretKey>,
}

/// Raw flags of `roster setup`.
#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub database: super::DatabaseArgs,

    /// 64 hex characters that encrypt the App stored by setup.
    #[arg(long, env = "ROSTER_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,

    /// Print the stored App as environment lines (`KEY=value`).
    #[arg(long)]
    pub print_env: bool,
}

impl SetupArgs {
    /// The database settings and the key, when set.
    pub fn validate(self) -> Result<(super::DatabaseSettings, Option<SecretKey>), ConfigError> {
        let database = self.database.validate()?;
        let key = super::non_empty(self.secret_key)
            .map(|raw| {
                SecretKey::from_hex(&raw)
                    .map_err(|e| ConfigError::new("ROSTER_SECRET_KEY", e.to_string()))
            })
            .transpose()?;
        Ok((database, key))
    }
}

/// Parses the raw values (empty ones already treated as unset).
pub(super) fn parse(
    github_url: Option<String>,
    api_url: &str,
    graphql_url: Option<String>,
    public_url: Option<String>,
    secret_key: Option<String>,
) -> Result<SetupSettings, ConfigError> {
    let api_url = parse_http_url("GITHUB_API_URL", api_url)?;
    let graphql_url = match graphql_url {
        Some(raw) => parse_http_url("GITHUB_GRAPHQL_URL", &raw)?,
        None => derive_graphql_url(&api_url),
    };
    let github_url = match github_url {
        Some(raw) => parse_http_url("GITHUB_URL", &raw)?,
        None => derive_web_url(&api_url),
    };
    let public_url = public_url
        .map(|raw| PublicUrl::parse(&raw).map_err(|m| ConfigError::new("ROSTER_PUBLIC_URL", m)))
        .transpose()?;
    let secret_key = secret_key
        .map(|raw| {
            SecretKey::from_hex(&raw)
                .map_err(|e| ConfigError::new("ROSTER_SECRET_KEY", e.to_string()))
        })
        .transpose()?;
    Ok(SetupSettings {
        github_url,
        api_url,
        graphql_url,
        public_url,
        secret_key,
    })
}

/// `https://github.com` for the public API; GitHub Enterprise Server's
/// host for `https://host/api/v3`; anything else (a test double) as is.
pub fn derive_web_url(api_url: &Url) -> Url {
    if api_url.host_str() == Some("api.github.com") {
        return Url::parse("https://github.com").unwrap_or_else(|_| api_url.clone());
    }
    let mut url = api_url.clone();
    let path = url.path().trim_end_matches('/');
    let path = path.strip_suffix("/api/v3").unwrap_or(path).to_owned();
    url.set_path(&path);
    url.set_query(None);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn github_url_should_follow_the_api_url() {
        let web = |api: &str| {
            derive_web_url(&url(api))
                .as_str()
                .trim_end_matches('/')
                .to_owned()
        };
        assert_eq!(web("https://api.github.com"), "https://github.com");
        assert_eq!(web("https://ghe.acme.test/api/v3"), "https://ghe.acme.test");
        assert_eq!(web("http://127.0.0.1:9000/"), "http://127.0.0.1:9000");
    }

    #[test]
    fn github_url_may_be_set_without_an_app_and_bad_values_name_their_setting() {
        let s = parse(
            Some("https://ghe.acme.test".into()),
            "https://ghe.acme.test/api/v3",
            None,
            Some("https://roster.acme.test/".into()),
            None,
        )
        .expect("valid");
        assert_eq!(s.github_url.as_str(), "https://ghe.acme.test/");
        assert_eq!(s.graphql_url.as_str(), "https://ghe.acme.test/api/graphql");
        assert_eq!(
            s.public_url.map(|u| u.base().to_owned()).as_deref(),
            Some("https://roster.acme.test")
        );
        let e = parse(
            Some("nope".into()),
            "https://api.github.com",
            None,
            None,
            None,
        )
        .expect_err("bad");
        assert_eq!(e.setting, "GITHUB_URL");
        let e =
            parse(None, "https://api.github.com", None, Some("x".into()), None).expect_err("bad");
        assert_eq!(e.setting, "ROSTER_PUBLIC_URL");
        let e = parse(
            None,
            "https://api.github.com",
            None,
            None,
            Some("short".into()),
        )
        .expect_err("bad");
        assert_eq!(e.setting, "ROSTER_SECRET_KEY");
        assert!(e.message.contains("64 hexadecimal"), "{e}");
    }
}
