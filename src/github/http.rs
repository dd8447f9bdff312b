//! The one road to GitHub: every request goes through [`Http::send`], which
//! applies the timeout, honours and records the rate limits, and counts the
//! answer by status.
//!
//! Requests carry absolute URLs and their own `Authorization` header, so the
//! same code serves github.com, GitHub Enterprise Server (`/api/v3` and
//! `/api/graphql` on one host) and the test double alike.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::{header, HeaderMap, HeaderValue, Method};
use octocrab::Octocrab;
use url::Url;

use super::error::GithubError;
use super::rate_limit::{Admission, Bucket, RateHeaders, RateLimits, Who};
use crate::controller::Failure;
use crate::metrics::Metrics;
use crate::source::InstallationId;

/// The REST API version Roster is written against.
const API_VERSION: &str = "2022-11-28";

/// One request to send.
#[derive(Debug)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    /// `Authorization: Bearer …` (a JWT or an installation token).
    pub bearer: String,
    pub bucket: Bucket,
    pub accept: &'static str,
    pub if_none_match: Option<String>,
    pub body: Option<String>,
}

impl Request {
    pub fn get(url: Url, bearer: String, bucket: Bucket) -> Self {
        Self {
            method: Method::GET,
            url,
            bearer,
            bucket,
            accept: "application/vnd.github+json",
            if_none_match: None,
            body: None,
        }
    }

    /// `METHOD /path` for messages (no host, no query: nothing secret).
    pub fn describe(&self) -> String {
        format!("{} {}", self.method, self.url.path())
    }
}

/// An answer, whatever its status (rate limits excepted: those are errors).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// GitHub's `message` field, or the start of the body.
    pub fn message(&self) -> String {
        github_message(&self.body)
    }
}

/// Why a call gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("GitHub did not answer {what} within {}", humantime::format_duration(*.timeout))]
    Timeout { what: String, timeout: Duration },
    #[error("could not reach GitHub ({what}): {message}")]
    Transport { what: String, message: String },
    #[error("GitHub rate limit: {message}")]
    RateLimited { wait: Duration, message: String },
    /// The installation's hourly budget is spent: nothing is wrong with the
    /// request, it waits for the window to reset.
    #[error("waiting for GitHub's rate limit, resets at {}", clock(*.resets_at))]
    BudgetSpent {
        wait: Duration,
        resets_at: SystemTime,
    },
    /// The installation is gone (the App was uninstalled): a definite answer.
    #[error("installation {0} no longer exists")]
    InstallationGone(InstallationId),
    #[error("installation suspended")]
    Suspended(InstallationId),
    #[error("GitHub answered {status} to {what}: {message}")]
    Status {
        what: String,
        status: u16,
        message: String,
    },
    #[error("unexpected answer from GitHub to {what}: {message}")]
    Unexpected { what: String, message: String },
}

impl CallError {
    pub fn status(request: &Request, reply: &Reply) -> Self {
        CallError::Status {
            what: request.describe(),
            status: reply.status,
            message: reply.message(),
        }
    }

    pub fn unexpected(what: impl Into<String>, message: impl ToString) -> Self {
        CallError::Unexpected {
            what: what.into(),
            message: message.to_string(),
        }
    }

    /// The controller's view: a rate limit carries its wait; a spent
    /// budget defers the work without counting it as a failure.
    pub fn into_failure(self) -> Failure {
        match &self {
            CallError::RateLimited { wait, .. } => {
                let wait = *wait;
                Failure::new(self).retry_after(wait)
            }
            CallError::BudgetSpent { wait, .. } => {
                let wait = *wait;
                Failure::deferred(self, wait)
            }
            _ => Failure::new(self),
        }
    }

    /// A rate limit in `bucket` with `wait`: [`CallError::BudgetSpent`]
    /// when the bucket's budget is spent, else [`CallError::RateLimited`].
    pub fn rate_limited(
        limits: &RateLimits,
        bucket: Bucket,
        wait: Duration,
        message: String,
    ) -> Self {
        match limits.spent_until(bucket, SystemTime::now()) {
            Some(resets_at) => CallError::BudgetSpent { wait, resets_at },
            None => CallError::RateLimited { wait, message },
        }
    }
}

/// Sends requests; shared by the App and every installation.
#[derive(Debug)]
pub struct Http {
    transport: Octocrab,
    timeout: Duration,
    limits: RateLimits,
    metrics: Arc<Metrics>,
}

impl Http {
    /// `origin` is any URL on the API host (only its scheme and authority
    /// matter: requests carry absolute URLs).
    pub fn new(
        origin: &Url,
        timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> Result<Self, GithubError> {
        let transport = Octocrab::builder()
            .base_uri(origin.origin().ascii_serialization())
            .map_err(|e| GithubError::ApiUrl(e.to_string()))?
            // Reads are bounded by the timeout around each whole exchange
            // in `send`, which names the request in its message.
            .set_connect_timeout(Some(timeout))
            .build()
            .map_err(|e| GithubError::Client(e.to_string()))?;
        Ok(Self {
            transport,
            timeout,
            limits: RateLimits::default(),
            metrics,
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn limits(&self) -> &RateLimits {
        &self.limits
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Sends `request` once: pacing first, then the request under the
    /// timeout, then the answer's rate-limit headers. A rate-limit answer
    /// is returned as [`CallError::RateLimited`]; other statuses as replies.
    pub async fn send(&self, request: Request) -> Result<Reply, CallError> {
        match self.limits.admit(request.bucket, SystemTime::now()) {
            Admission::Go => {}
            Admission::Pause(wait) => tokio::time::sleep(wait).await,
            Admission::Refuse(wait) => {
                return Err(CallError::rate_limited(
                    &self.limits,
                    request.bucket,
                    wait,
                    "budget spent; waiting for the rate-limit window to reset".into(),
                ))
            }
        }
        let what = request.describe();
        let http_request = self.build(&request)?;
        let exchange = async {
            let response =
                self.transport
                    .send(http_request)
                    .await
                    .map_err(|e| CallError::Transport {
                        what: what.clone(),
                        message: error_chain(&e),
                    })?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = self.transport.body_to_string(response).await.map_err(|e| {
                CallError::Transport {
                    what: what.clone(),
                    message: error_chain(&e),
                }
            })?;
            Ok::<_, CallError>(Reply {
                status,
                headers,
                body,
            })
        };
        let reply = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout {
                what: what.clone(),
                timeout: self.timeout,
            })??;

        self.metrics.github_request(reply.status);
        let rate = RateHeaders::from_headers(&reply.headers);
        let mentions_limit =
            reply.status == 403 && reply.body.to_ascii_lowercase().contains("rate limit");
        let limited = self.limits.observe(
            request.bucket,
            reply.status,
            &rate,
            mentions_limit,
            SystemTime::now(),
        );
        self.report_remaining(request.bucket);
        if let Some(wait) = limited {
            return Err(CallError::rate_limited(
                &self.limits,
                request.bucket,
                wait,
                reply.message(),
            ));
        }
        Ok(reply)
    }

    /// Records a rate limit GitHub reported in a body (GraphQL's
    /// `RATE_LIMITED`), with its answer's headers; returns the wait.
    pub fn rate_limited(&self, bucket: Bucket, headers: &RateHeaders) -> Duration {
        self.limits.limited(bucket, headers, SystemTime::now())
    }

    fn report_remaining(&self, bucket: Bucket) {
        if let Who::Installation(id) = bucket.who {
            if let Some((remaining, limit)) = self.limits.lowest_budget(id) {
                let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                self.metrics.rate_limit_remaining(id, count(remaining));
                self.metrics.rate_limit_size(id, count(limit));
            }
        }
    }

    fn build(
        &self,
        request: &Request,
    ) -> Result<axum::http::Request<octocrab::OctoBody>, CallError> {
        let bad = |message: String| CallError::Unexpected {
            what: request.describe(),
            message,
        };
        let mut builder = axum::http::Request::builder()
            .method(request.method.clone())
            .uri(request.url.as_str())
            .header(header::ACCEPT, request.accept)
            .header("x-github-api-version", API_VERSION);
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", request.bearer))
            .map_err(|_| bad("credentials are not a valid header value".into()))?;
        auth.set_sensitive(true);
        builder = builder.header(header::AUTHORIZATION, auth);
        if let Some(etag) = &request.if_none_match {
            builder = builder.header(header::IF_NONE_MATCH, etag.as_str());
        }
        let body = match &request.body {
            Some(body) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                octocrab::OctoBody::from(body.clone())
            }
            None => octocrab::OctoBody::empty(),
        };
        builder.body(body).map_err(|e| bad(e.to_string()))
    }
}

/// `14:05:00 UTC`: when a rate-limit window resets, as people read it.
fn clock(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%H:%M:%S UTC")
        .to_string()
}

/// GitHub's `message` field of an error body, or the start of the body.
pub fn github_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        message: String,
    }
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(e) => e.message,
        Err(_) => {
            let mut text: String = body.chars().take(200).collect();
            if text.len() < body.len() {
                text.push('…');
            }
            if text.trim().is_empty() {
                "(empty body)".into()
            } else {
                text
            }
        }
    }
}

/// An error and its sources on one line (transport errors nest deeply).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// `base` with `segments` appended as path segments (each percent-encoded),
/// keeping any path `base` has (`/api/v3` on GitHub Enterprise Server).
pub fn join<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Result<Url, CallError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|_| CallError::unexpected("building a URL", format!("{base} cannot take a path")))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// The `rel="next"` target of a `Link` header.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|p| p.trim() == "rel=\"next\"");
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_owned())
    })
}

#[cfg(test)]
mod tests;
