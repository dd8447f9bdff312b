//! Exchanging the code GitHub hands back for the App it registered
//! (`POST /app-manifests/{code}/conversions`), and checking the App is the
//! one this Roster asked for.

use std::time::Duration;

use axum::http::{header, Method};
use octocrab::Octocrab;
use serde::Deserialize;
use url::Url;

use super::store::StoredApp;
use crate::github::http::{error_chain, github_message, join};

/// How long the exchange may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Why no App came out of the exchange.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// GitHub could not be reached or failed; trying again may work.
    #[error("GitHub could not be reached: {0}")]
    Unreachable(String),
    /// GitHub refused the code (unknown, used or expired).
    #[error("GitHub refused the code ({status}): {message}")]
    Refused { status: u16, message: String },
    /// GitHub answered something that is not an App.
    #[error("GitHub's answer is not an App: {0}")]
    Malformed(String),
    /// An App, but not the one this setup asked for.
    #[error("the code belongs to another App: {0}")]
    OtherApp(String),
}

impl ExchangeError {
    /// Whether the same callback may succeed later.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable(_))
    }
}

#[derive(Deserialize)]
struct Owner {
    login: String,
}

/// GitHub's answer (the fields Roster keeps or checks).
#[derive(Deserialize)]
struct Conversion {
    id: u64,
    slug: String,
    html_url: String,
    external_url: Option<String>,
    owner: Option<Owner>,
    client_id: String,
    client_secret: String,
    webhook_secret: Option<String>,
    pem: String,
}

/// What the App must match: the organisation (empty for a personal
/// account) and the public address the manifest named.
pub struct Expected<'a> {
    pub org: &'a str,
    pub public_url: &'a str,
}

/// Exchanges `code` at `api_url` and checks the App against `expected`.
pub async fn exchange(
    api_url: &Url,
    code: &str,
    expected: &Expected<'_>,
) -> Result<StoredApp, ExchangeError> {
    let valid = !code.is_empty()
        && code.len() <= 128
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !valid {
        return Err(ExchangeError::Refused {
            status: 400,
            message: "the code is not one GitHub issues".into(),
        });
    }
    let url = join(api_url, ["app-manifests", code, "conversions"])
        .map_err(|e| ExchangeError::Unreachable(e.to_string()))?;
    let (status, body) = tokio::time::timeout(TIMEOUT, post(&url))
        .await
        .map_err(|_| ExchangeError::Unreachable(format!("no answer within {TIMEOUT:?}")))??;
    match status {
        200..=299 => {}
        500..=599 => {
            return Err(ExchangeError::Unreachable(format!(
                "{status}: {}",
                github_message(&body)
            )))
        }
        _ => {
            return Err(ExchangeError::Refused {
                status,
                message: github_message(&body),
            })
        }
    }
    let app: Conversion =
        serde_json::from_str(&body).map_err(|e| ExchangeError::Malformed(e.to_string()))?;
    check(&app, expected)?;
    Ok(StoredApp {
        app_id: app.id,
        slug: app.slug,
        html_url: app.html_url,
        pem: app.pem,
        webhook_secret: app
            .webhook_secret
            .ok_or_else(|| ExchangeError::Malformed("no webhook_secret".into()))?,
        client_id: app.client_id,
        client_secret: app.client_secret,
    })
}

fn check(app: &Conversion, expected: &Expected<'_>) -> Result<(), ExchangeError> {
    let owner = app.owner.as_ref().map(|o| o.login.as_str()).unwrap_or("");
    if !expected.org.is_empty() && !owner.eq_ignore_ascii_case(expected.org) {
        return Err(ExchangeError::OtherApp(format!(
            "it is owned by {owner:?}, setup asked for {:?}",
            expected.org
        )));
    }
    let external = app.external_url.as_deref().unwrap_or("");
    if external.trim_end_matches('/') != expected.public_url {
        return Err(ExchangeError::OtherApp(format!(
            "its homepage is {external:?}, setup asked for {:?}",
            expected.public_url
        )));
    }
    Ok(())
}

async fn post(url: &Url) -> Result<(u16, String), ExchangeError> {
    let unreachable = |e: &dyn std::error::Error| ExchangeError::Unreachable(error_chain(e));
    let transport = Octocrab::builder()
        .base_uri(url.origin().ascii_serialization())
        .map_err(|e| unreachable(&e))?
        .set_connect_timeout(Some(TIMEOUT))
        .build()
        .map_err(|e| unreachable(&e))?;
    let request = axum::http::Request::builder()
        .method(Method::POST)
        .uri(url.as_str())
        .header(header::ACCEPT, "application/vnd.github+json")
        .body(octocrab::OctoBody::empty())
        .map_err(|e| unreachable(&e))?;
    let response = transport.send(request).await.map_err(|e| unreachable(&e))?;
    let status = response.status().as_u16();
    let body = transport
        .body_to_string(response)
        .await
        .map_err(|e| unreachable(&e))?;
    Ok((status, body))
}
