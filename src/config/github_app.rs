//! The GitHub App's settings: its id, its key (checked by signing with it,
//! so a bad key stops the server at start), the webhook secret and the URLs.

use std::path::PathBuf;

use secrecy::SecretString;
use url::Url;

use super::ConfigError;

pub use crate::github::GithubAppSettings;

/// `None` when no App is configured (GITHUB_APP_ID unset).
pub(super) fn from_args(
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

/// Signs a throwaway token with the key, as octocrab will sign the App's
/// tokens: through octocrab's own JWT types, so the check and the use can
/// never disagree about what a key is.
fn check_rsa_key(setting: &'static str, pem: &str) -> Result<(), ConfigError> {
    use octocrab::jsonwebtoken;
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

pub(super) fn parse_http_url(setting: &'static str, raw: &str) -> Result<Url, ConfigError> {
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
