//! The GitHub App as a source of repositories: built once from the settings,
//! it hands out the lister (periodic listing) and the storage (one
//! repository by id), which share the App's credentials, token caches, rate
//! limits and ETag cache.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use sqlx::PgPool;
use url::Url;

use super::auth::{Auth, Installation};
use super::client::Client;
use super::error::GithubError;
use super::http::{join, CallError, Http, Reply, Request};
use super::lister::GithubLister;
use super::rate_limit::{Bucket, Resource, Who};
use super::settings::GithubAppSettings;
use super::storage::GithubStorage;
use crate::controller::Failure;
use crate::metrics::Metrics;

/// Tuning of the GitHub client; the defaults suit github.com.
#[derive(Debug, Clone)]
pub struct GithubOptions {
    /// Every request (token, REST, GraphQL page) gives up after this long.
    pub request_timeout: Duration,
    /// How many answers the ETag cache remembers.
    pub etag_capacity: usize,
}

impl Default for GithubOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(10),
            etag_capacity: 20_000,
        }
    }
}

/// The GitHub App source.
#[derive(Debug, Clone)]
pub struct GithubSource {
    client: Arc<Client>,
}

impl GithubSource {
    /// The registry as this source reads it.
    pub(crate) fn registry(&self) -> &crate::registry::RegistryDb {
        &self.client.registry
    }

    /// Builds the source with default options; see [`Self::connect_with`].
    pub async fn connect(
        settings: &GithubAppSettings,
        project_file: &str,
        pool: PgPool,
        metrics: Arc<Metrics>,
    ) -> Result<Self, GithubError> {
        Self::connect_with(
            settings,
            project_file,
            pool,
            metrics,
            GithubOptions::default(),
        )
        .await
    }

    /// Builds the source and lists the App's installations once. A key or
    /// URL it cannot use is an error; GitHub being unreachable is not (the
    /// listing asks again), it is only logged.
    pub async fn connect_with(
        settings: &GithubAppSettings,
        project_file: &str,
        pool: PgPool,
        metrics: Arc<Metrics>,
        options: GithubOptions,
    ) -> Result<Self, GithubError> {
        check_url(&settings.api_url).map_err(GithubError::ApiUrl)?;
        check_url(&settings.graphql_url).map_err(GithubError::GraphqlUrl)?;
        let http = Http::new(&settings.api_url, options.request_timeout, metrics)?;
        let auth = Auth::new(settings, &http)?;
        let client = Client::new(
            http,
            auth,
            settings.api_url.clone(),
            settings.graphql_url.clone(),
            project_file,
            pool,
            options.etag_capacity,
        );
        let source = Self {
            client: Arc::new(client),
        };
        match source.client.refresh_installations().await {
            Ok(found) => tracing::info!(installations = found.len(), "GitHub App installations"),
            // A definite refusal of the App's own JWT: a wrong id or key.
            Err(error @ CallError::Status { status: 401, .. }) => {
                return Err(GithubError::AppRejected(error.to_string()));
            }
            Err(error) => {
                tracing::warn!(%error, "could not list the GitHub App's installations yet")
            }
        }
        Ok(source)
    }

    /// The periodic, org-wide listing.
    pub fn lister(&self) -> GithubLister {
        GithubLister::new(self.client.clone())
    }

    /// Reads the organisations' teams and members (the listing reads them
    /// too; this one serves the re-reads webhooks ask for).
    pub fn directory(&self) -> super::directory::DirectoryReader {
        super::directory::DirectoryReader::new(self.client.clone())
    }

    /// Reads one repository by id.
    pub fn storage(&self) -> GithubStorage {
        GithubStorage::new(self.client.clone())
    }

    /// The checks API (the `Roster` check run), sharing the App's tokens
    /// and rate limits.
    pub fn checks(&self) -> super::checks_api::ChecksApi {
        super::checks_api::ChecksApi::new(self.client.clone())
    }

    /// Lists the App's installations now (and remembers them).
    pub async fn refresh_installations(&self) -> Result<Vec<Installation>, Failure> {
        self.client
            .refresh_installations()
            .await
            .map_err(CallError::into_failure)
    }

    /// `segments` under the REST API URL (keeps a GHES `/api/v3` prefix).
    pub fn api_url<'a>(&self, segments: impl IntoIterator<Item = &'a str>) -> Result<Url, Failure> {
        join(&self.client.api_url, segments).map_err(CallError::into_failure)
    }

    /// Sends one App-authenticated (JWT) request, for App-level endpoints
    /// such as the webhook delivery log. Rate limits, the timeout and the
    /// request metrics apply as for every other request; the status is the
    /// caller's to judge (a rate limit is returned as a `Failure` with its
    /// wait).
    pub async fn app_request(
        &self,
        method: Method,
        url: Url,
        body: Option<String>,
    ) -> Result<Reply, Failure> {
        let jwt = self.client.auth.jwt().map_err(CallError::into_failure)?;
        let request = Request {
            method,
            body,
            ..Request::get(
                url,
                jwt,
                Bucket {
                    who: Who::App,
                    resource: Resource::Core,
                },
            )
        };
        self.client
            .http
            .send(request)
            .await
            .map_err(CallError::into_failure)
    }
}

fn check_url(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() || url.host().is_none() {
        return Err(format!("{url} is not an http(s) URL"));
    }
    Ok(())
}
