//! What the GitHub source needs to talk to GitHub as an App. `config`
//! reads and checks these settings; the source only uses them, so the
//! arrow points from `config` to `github` and never back.

use secrecy::{ExposeSecret, SecretString};
use url::Url;

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

impl GithubAppSettings {
    /// The webhook secret's bytes, for HMAC verification.
    pub fn webhook_secret_bytes(&self) -> &[u8] {
        self.webhook_secret.expose_secret().as_bytes()
    }
}
