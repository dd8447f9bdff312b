//! GitHub App authentication: the App's JWT (RS256, signed with its private
//! key) for App-level calls, and one installation token per installation for
//! everything else.
//!
//! Installation tokens come from octocrab's per-installation client, which
//! caches the token and mints a new one when the cached one is within
//! [`TOKEN_MARGIN`] of expiring. The cache lives inside that client (a clone
//! gets a copy, not a share), so each installation's client is kept here
//! once, and minting is serialised per installation so that a burst of
//! workers mints one token, not one each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use octocrab::auth::AppAuth;
use octocrab::models::{AppId, InstallationId as OctocrabInstallationId};
use octocrab::Octocrab;
use secrecy::ExposeSecret;
use serde::Deserialize;
use url::Url;

use super::error::GithubError;
use super::http::{error_chain, join, next_link, CallError, Http, Request};
use super::rate_limit::{Bucket, RateHeaders, Resource, Who};
use super::settings::GithubAppSettings;
use crate::source::InstallationId;

/// A token is renewed once it has less than this left, so that no request
/// (or a listing's last page) goes out with a token about to expire.
const TOKEN_MARGIN: chrono::Duration = chrono::Duration::minutes(5);

/// At most this many pages of installations (100 each) are read.
const MAX_INSTALLATION_PAGES: usize = 1000;

const APP_BUCKET: Bucket = Bucket {
    who: Who::App,
    resource: Resource::Core,
};

/// One installation of the App: an account (organisation or user) that
/// granted it some or all of its repositories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    pub id: InstallationId,
    /// The account's login, whose repositories the listing walks.
    pub account: String,
    /// The account's id (by which its directory is kept), when GitHub said.
    pub account_id: Option<i64>,
    /// An organisation (it has teams), not a personal account.
    pub organization: bool,
    pub suspended: bool,
    /// What the installation granted the App, when GitHub said.
    pub granted: Option<Granted>,
}

/// An installation's permissions (`name` → `read`, `write` or `admin`),
/// the events it delivers, and the App's slug, as GitHub lists them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Granted {
    pub permissions: std::collections::BTreeMap<String, String>,
    pub events: Vec<String>,
    pub app_slug: Option<String>,
}

/// The App's credentials and its installations' token caches.
#[derive(Debug)]
pub struct Auth {
    app: Octocrab,
    app_auth: AppAuth,
    api_url: Url,
    clients: Mutex<HashMap<InstallationId, Arc<InstallationClient>>>,
}

#[derive(Debug)]
struct InstallationClient {
    crab: Octocrab,
    mint: tokio::sync::Mutex<()>,
}

impl Auth {
    pub fn new(settings: &GithubAppSettings, http: &Http) -> Result<Self, GithubError> {
        let key =
            octocrab::EncodingKey::from_rsa_pem(settings.private_key.expose_secret().as_bytes())
                .map_err(|e| GithubError::PrivateKey(e.to_string()))?;
        let timeout = Some(http.timeout());
        let app = Octocrab::builder()
            .app(AppId(settings.app_id), key.clone())
            .base_uri(settings.api_url.as_str())
            .map_err(|e| GithubError::ApiUrl(e.to_string()))?
            // Token requests run under the timeout in `token`.
            .set_connect_timeout(timeout)
            .build()
            .map_err(|e| GithubError::Client(e.to_string()))?;
        let app_auth = AppAuth {
            app_id: AppId(settings.app_id),
            key,
        };
        // Sign once now, so a key that cannot sign fails at start, not later.
        app_auth
            .generate_bearer_token()
            .map_err(|e| GithubError::PrivateKey(error_chain(&e)))?;
        Ok(Self {
            app,
            app_auth,
            api_url: settings.api_url.clone(),
            clients: Mutex::new(HashMap::new()),
        })
    }

    /// A fresh JWT for App-level calls (valid for a few minutes).
    pub fn jwt(&self) -> Result<String, CallError> {
        self.app_auth
            .generate_bearer_token()
            .map_err(|e| CallError::unexpected("signing the App's JWT", error_chain(&e)))
    }

    /// A valid token for `installation`, minted only when the cached one is
    /// missing or close to expiry.
    pub async fn token(
        &self,
        http: &Http,
        installation: InstallationId,
    ) -> Result<String, CallError> {
        let client = self.client(installation)?;
        let _minting = client.mint.lock().await;
        let what = format!("POST /app/installations/{installation}/access_tokens");
        let mint = client.crab.installation_token_with_buffer(TOKEN_MARGIN);
        match tokio::time::timeout(http.timeout(), mint).await {
            Ok(Ok(token)) => Ok(token.expose_secret().to_owned()),
            Ok(Err(error)) => Err(self.mint_error(http, installation, &what, error)),
            Err(_) => Err(CallError::Timeout {
                what,
                timeout: http.timeout(),
            }),
        }
    }

    /// Drops the cached token of `installation` (GitHub answered 401 to it).
    pub fn forget(&self, installation: InstallationId) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.remove(&installation);
        }
    }

    /// Every installation of the App (`GET /app/installations`, every page).
    pub async fn installations(&self, http: &Http) -> Result<Vec<Installation>, CallError> {
        #[derive(Deserialize)]
        struct Account {
            login: String,
            id: Option<i64>,
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        #[derive(Deserialize)]
        struct Item {
            id: i64,
            account: Option<Account>,
            suspended_at: Option<serde_json::Value>,
            permissions: Option<std::collections::BTreeMap<String, String>>,
            events: Option<Vec<String>>,
            app_slug: Option<String>,
        }

        let mut url = join(&self.api_url, ["app", "installations"])?;
        url.set_query(Some("per_page=100"));
        let mut found = Vec::new();
        for _ in 0..MAX_INSTALLATION_PAGES {
            let request = Request::get(url.clone(), self.jwt()?, APP_BUCKET);
            let what = request.describe();
            let reply = http.send(request).await?;
            if reply.status != 200 {
                return Err(CallError::Status {
                    what,
                    status: reply.status,
                    message: reply.message(),
                });
            }
            let items: Vec<Item> =
                serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(&what, e))?;
            for item in items {
                let Some(account) = item.account else {
                    tracing::warn!(
                        installation = item.id,
                        "installation without an account; skipped"
                    );
                    continue;
                };
                let suspended = item.suspended_at.is_some_and(|v| !v.is_null());
                found.push(Installation {
                    id: InstallationId(item.id),
                    account: account.login,
                    account_id: account.id,
                    organization: account.kind.as_deref() != Some("User"),
                    suspended,
                    granted: item.permissions.map(|permissions| Granted {
                        permissions,
                        events: item.events.unwrap_or_default(),
                        app_slug: item.app_slug,
                    }),
                });
            }
            match reply.header("link").and_then(next_link) {
                Some(next) => {
                    url = Url::parse(&next).map_err(|e| CallError::unexpected(&what, e))?
                }
                None => return Ok(found),
            }
        }
        Err(CallError::unexpected(
            "GET /app/installations",
            "too many pages",
        ))
    }

    fn client(&self, installation: InstallationId) -> Result<Arc<InstallationClient>, CallError> {
        let what = || format!("installation {installation}");
        let mut clients = self
            .clients
            .lock()
            .map_err(|_| CallError::unexpected(what(), "token cache lock poisoned"))?;
        if let Some(client) = clients.get(&installation) {
            return Ok(client.clone());
        }
        let id = u64::try_from(installation.0)
            .map_err(|_| CallError::unexpected(what(), "negative installation id"))?;
        let crab = self
            .app
            .installation(OctocrabInstallationId(id))
            .map_err(|e| CallError::unexpected(what(), error_chain(&e)))?;
        let client = Arc::new(InstallationClient {
            crab,
            mint: tokio::sync::Mutex::new(()),
        });
        clients.insert(installation, client.clone());
        Ok(client)
    }

    /// Sorts a failed token request: gone, suspended, rate limited or other.
    fn mint_error(
        &self,
        http: &Http,
        installation: InstallationId,
        what: &str,
        error: octocrab::Error,
    ) -> CallError {
        let octocrab::Error::GitHub { source, .. } = &error else {
            return CallError::Transport {
                what: what.to_owned(),
                message: error_chain(&error),
            };
        };
        let status = source.status_code.as_u16();
        http.metrics().github_request(status);
        let headers = source
            .headers
            .as_ref()
            .map(RateHeaders::from_headers)
            .unwrap_or_default();
        let mentions_limit = source.message.to_ascii_lowercase().contains("rate limit");
        if let Some(wait) = http.limits().observe(
            APP_BUCKET,
            status,
            &headers,
            mentions_limit,
            SystemTime::now(),
        ) {
            return CallError::RateLimited {
                wait,
                message: source.message.clone(),
            };
        }
        match status {
            404 => CallError::InstallationGone(installation),
            403 if source.message.to_ascii_lowercase().contains("suspended") => {
                CallError::Suspended(installation)
            }
            _ => CallError::Status {
                what: what.to_owned(),
                status,
                message: source.message.clone(),
            },
        }
    }
}
