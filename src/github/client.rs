//! What the lister and the storage share: the HTTP road, the App's
//! credentials, the installations seen last, and the ETag cache.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use sqlx::PgPool;
use url::Url;

use super::auth::{Auth, Installation};
use super::etag::EtagCache;
use super::file_query::FileQuery;
use super::graphql::{Answer, GraphqlError};
use super::http::{CallError, Http, Reply, Request};
use super::rate_limit::{Bucket, RateHeaders, Resource, Who};
use crate::directory::DirectoryDb;
use crate::project::ProjectFiles;
use crate::registry::RegistryDb;
use crate::source::InstallationId;

/// The GitHub App as the source uses it; one per process.
#[derive(Debug)]
pub struct Client {
    pub http: Http,
    pub auth: Auth,
    pub api_url: Url,
    pub graphql_url: Url,
    /// Path of the project file inside a repository (no leading `/`), or
    /// the patterns (`ROSTER_PROJECT_FILES`) as written.
    pub project_file: String,
    /// How the queries ask for the files when the patterns are more than
    /// one path (`None`: the one file at `project_file`).
    pub file_query: Option<FileQuery>,
    /// What the registry recorded, for reading GitHub the right way.
    pub registry: RegistryDb,
    /// The organisations' teams and members.
    pub directory: DirectoryDb,
    etags: EtagCache,
    /// The installations the last successful listing of them returned.
    installations: Mutex<Option<Vec<Installation>>>,
    /// Where what the installations granted is kept ([`super::grants`]).
    pub(super) pool: PgPool,
    /// Pages (GraphQL requests) each installation's latest listing took:
    /// what the next one needs, kept in reserve by the read pace.
    listing_pages: Mutex<HashMap<InstallationId, usize>>,
}

impl Client {
    pub fn new(
        http: Http,
        auth: Auth,
        api_url: Url,
        graphql_url: Url,
        project_file: &str,
        pool: PgPool,
        etag_capacity: usize,
    ) -> Self {
        Self {
            http,
            auth,
            api_url,
            graphql_url,
            project_file: project_file.trim_start_matches('/').to_owned(),
            file_query: patterns_of(project_file).as_ref().and_then(FileQuery::new),
            directory: DirectoryDb::new(pool.clone()),
            pool: pool.clone(),
            registry: RegistryDb::new(pool),
            etags: EtagCache::new(etag_capacity),
            installations: Mutex::new(None),
            listing_pages: Mutex::default(),
        }
    }

    /// Reads every installation from GitHub and remembers them.
    pub async fn refresh_installations(&self) -> Result<Vec<Installation>, CallError> {
        let found = self.auth.installations(&self.http).await?;
        if let Err(error) = super::grants::record(&self.pool, &found).await {
            tracing::warn!(%error, "could not record what the installations granted");
        }
        if let Ok(mut cached) = self.installations.lock() {
            *cached = Some(found.clone());
        }
        Ok(found)
    }

    /// The installations seen last, read from GitHub when never read yet.
    pub async fn installations(&self) -> Result<Vec<Installation>, CallError> {
        let cached = self.installations.lock().ok().and_then(|c| c.clone());
        match cached {
            Some(found) => Ok(found),
            None => self.refresh_installations().await,
        }
    }

    /// Records that the listing of `installation` has asked for `pages`
    /// pages: all of them when `complete`, else so far (a listing under
    /// way never lowers what the one before needed).
    pub fn record_listing_pages(&self, installation: InstallationId, pages: usize, complete: bool) {
        if let Ok(mut recorded) = self.listing_pages.lock() {
            let known = recorded.entry(installation).or_insert(pages);
            *known = match complete {
                true => pages,
                false => (*known).max(pages),
            };
        }
    }

    /// Pages the latest listing of `installation` took (0 before the first).
    pub fn listing_pages(&self, installation: InstallationId) -> usize {
        self.listing_pages
            .lock()
            .ok()
            .and_then(|recorded| recorded.get(&installation).copied())
            .unwrap_or(0)
    }

    /// Whether the last listing (or a token request since) saw `id` suspended.
    pub fn is_suspended(&self, id: InstallationId) -> bool {
        let cached = self
            .installations
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .unwrap_or_default();
        cached.iter().any(|i| i.id == id && i.suspended)
    }

    /// Remembers that GitHub refused `id`'s token as suspended.
    pub fn mark_suspended(&self, id: InstallationId) {
        if let Ok(mut cached) = self.installations.lock() {
            if let Some(found) = cached.as_mut() {
                for installation in found.iter_mut().filter(|i| i.id == id) {
                    installation.suspended = true;
                }
            }
        }
    }

    /// `GET url` as `installation`. With `conditional`, sends the ETag of the
    /// last answer and turns a `304` back into that answer (status 200).
    /// A `401` (revoked token) is retried once with a fresh token.
    pub async fn get(
        &self,
        installation: InstallationId,
        url: &Url,
        accept: &'static str,
        conditional: bool,
    ) -> Result<Reply, CallError> {
        let bucket = Bucket {
            who: Who::Installation(installation),
            resource: Resource::Core,
        };
        let key = format!("{accept} {url}");
        let mut use_etag = conditional;
        let mut fresh_token = false;
        loop {
            let token = self.auth.token(&self.http, installation).await?;
            let mut request = Request::get(url.clone(), token, bucket);
            request.accept = accept;
            request.if_none_match = if use_etag {
                self.etags.etag(&key)
            } else {
                None
            };
            let sent_etag = request.if_none_match.clone();
            let reply = self.http.send(request).await?;
            match reply.status {
                401 if !fresh_token => {
                    self.auth.forget(installation);
                    fresh_token = true;
                }
                403 if is_suspension(&reply) => return Err(CallError::Suspended(installation)),
                304 => {
                    let cached = sent_etag.and_then(|etag| self.etags.body(&key, &etag));
                    match cached {
                        Some(body) => {
                            return Ok(Reply {
                                status: 200,
                                body,
                                ..reply
                            })
                        }
                        // Evicted meanwhile: ask again without a condition.
                        None if use_etag => use_etag = false,
                        None => {
                            return Err(CallError::unexpected(
                                format!("GET {}", url.path()),
                                "304 Not Modified to an unconditional request",
                            ))
                        }
                    }
                }
                200 => {
                    if conditional {
                        match reply.header("etag") {
                            Some(etag) => self.etags.put(&key, etag, &reply.body),
                            None => self.etags.forget(&key),
                        }
                    }
                    return Ok(reply);
                }
                _ => return Ok(reply),
            }
        }
    }

    /// Runs a GraphQL query as `installation`. GitHub's rate limit arrives
    /// either as a 403/429 or as a 200 with a `RATE_LIMITED` error; both
    /// come back as [`CallError::RateLimited`]. Any other error in the
    /// answer fails the call: a partial answer is not a complete one.
    pub async fn graphql<T: DeserializeOwned>(
        &self,
        installation: InstallationId,
        query: &str,
        variables: serde_json::Value,
    ) -> Result<T, CallError> {
        let (data, errors) = self.graphql_partial(installation, query, variables).await?;
        if !errors.is_empty() {
            let what = format!("POST {} (GraphQL)", self.graphql_url.path());
            let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
            return Err(CallError::unexpected(what, messages.join("; ")));
        }
        Ok(data)
    }

    /// Like [`Client::graphql`], but an answer with data and errors is
    /// returned whole, for a query whose parts stand alone (the batch read:
    /// one repository GitHub cannot resolve spoils only itself). A rate
    /// limit, or errors without data, still fail the call.
    pub async fn graphql_partial<T: DeserializeOwned>(
        &self,
        installation: InstallationId,
        query: &str,
        variables: serde_json::Value,
    ) -> Result<(T, Vec<GraphqlError>), CallError> {
        let bucket = Bucket {
            who: Who::Installation(installation),
            resource: Resource::Graphql,
        };
        let body = serde_json::json!({ "query": query, "variables": variables }).to_string();
        let mut fresh_token = false;
        let reply = loop {
            let token = self.auth.token(&self.http, installation).await?;
            let request = Request {
                method: axum::http::Method::POST,
                accept: "application/json",
                body: Some(body.clone()),
                ..Request::get(self.graphql_url.clone(), token, bucket)
            };
            let what = request.describe();
            let reply = self.http.send(request).await?;
            match reply.status {
                200 => break reply,
                401 if !fresh_token => {
                    self.auth.forget(installation);
                    fresh_token = true;
                }
                403 if is_suspension(&reply) => return Err(CallError::Suspended(installation)),
                status => {
                    return Err(CallError::Status {
                        what,
                        status,
                        message: reply.message(),
                    })
                }
            }
        };
        let what = format!("POST {} (GraphQL)", self.graphql_url.path());
        let answer: Answer<T> =
            serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(&what, e))?;
        if let Some(limited) = answer.errors.iter().find(|e| e.is_rate_limit()) {
            let wait = self
                .http
                .rate_limited(bucket, &RateHeaders::from_headers(&reply.headers));
            return Err(CallError::rate_limited(
                self.http.limits(),
                bucket,
                wait,
                limited.message.clone(),
            ));
        }
        match answer.data {
            Some(data) => Ok((data, answer.errors)),
            None if answer.errors.is_empty() => {
                Err(CallError::unexpected(what, "no data in the answer"))
            }
            None => {
                let messages: Vec<&str> =
                    answer.errors.iter().map(|e| e.message.as_str()).collect();
                Err(CallError::unexpected(what, messages.join("; ")))
            }
        }
    }
}

/// The patterns in `project_file` when it holds any (`*`, or several
/// paths); a plain path is read as it is written.
fn patterns_of(project_file: &str) -> Option<ProjectFiles> {
    if !project_file.contains(['*', ',']) {
        return None;
    }
    ProjectFiles::parse(project_file).ok()
}

/// A token minted before the installation was suspended answers 403
/// "This installation has been suspended".
fn is_suspension(reply: &Reply) -> bool {
    reply.message().to_ascii_lowercase().contains("suspended")
}
