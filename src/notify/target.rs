//! One notification target's delivery loop: takes the target's lease,
//! sends the changes after its cursor one by one, in `seq` order, and moves
//! the cursor on each 2xx; a failure waits out the backoff and retries the
//! same change. Each target has its own task, so a slow or dead one delays
//! nobody else, and nothing here runs inside a reconcile.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, Method, Request};
use octocrab::{OctoBody, Octocrab};
use secrecy::{ExposeSecret, SecretString};
use sqlx::PgPool;

use super::metrics::NotifyMetrics;
use super::{outbox, redact, sign, stall};
use crate::controller::backoff::Backoff;
use crate::registry::changes::{self, Change, ChangeWaker, FeedError};
use crate::shutdown::Shutdown;

/// Changes read from the log at a time.
const BATCH: i64 = 100;

/// A change as the body of its notification: the shape the feed shows
/// (`web::json::change_body`), handed in where the parts are wired so that
/// what is sent and what the feed answers cannot differ.
pub type EncodeChange = fn(&Change) -> Result<String, serde_json::Error>;

/// What every target's task shares.
pub struct Delivery {
    pub pool: PgPool,
    pub transport: Octocrab,
    pub secret: SecretString,
    /// This replica, as the lease names it.
    pub owner: String,
    pub waker: ChangeWaker,
    pub metrics: NotifyMetrics,
    /// One whole exchange (connect, send, answer) at most.
    pub timeout: Duration,
    /// How long a replica keeps a target without renewing.
    pub lease: Duration,
    pub backoff: Backoff,
    /// How a change is written as a body.
    pub encode: EncodeChange,
}

/// How one attempt at one change ended.
enum Sent {
    Acknowledged,
    Failed(String),
}

impl Delivery {
    /// Delivers to `url` until `stop` is asked, then gives the lease up;
    /// logs and metrics name it by its scheme, host and port.
    pub async fn run(self: Arc<Self>, url: String, stop: Shutdown) {
        let label = redact(&url);
        self.run_as(url, label, stop).await;
    }

    /// [`Delivery::run`], naming the target `label` (see
    /// [`super::labels`]) in logs and metrics.
    pub async fn run_as(self: Arc<Self>, url: String, label: String, stop: Shutdown) {
        if let Err(error) = outbox::register(&self.pool, &url).await {
            tracing::warn!(target_url = %label, %error, "notify: cannot register the target");
        }
        let mut waiter = self.waker.waiter();
        // The lease is renewed at least this often while idle or backing off.
        let renew = self.lease / 3;
        while !stop.is_stopped() {
            let pause = match self.round(&url, &label).await {
                Ok(pause) => pause,
                Err(error) => {
                    tracing::warn!(target_url = %label, %error, "notify: database error");
                    Some(Duration::from_secs(1))
                }
            };
            let Some(pause) = pause else { continue };
            tokio::select! {
                () = waiter.wait(pause.min(renew)) => {}
                () = stop.wait() => {}
            }
        }
        if let Err(error) = outbox::release(&self.pool, &url, &self.owner).await {
            tracing::warn!(target_url = %label, %error, "notify: cannot release the lease");
        }
    }

    /// One round: lease, read, send. Returns how long to pause before the
    /// next round (`None`: go on at once, more is waiting).
    async fn round(&self, url: &str, label: &str) -> Result<Option<Duration>, sqlx::Error> {
        let Some(leased) = outbox::acquire(&self.pool, url, &self.owner, self.lease).await? else {
            // Another replica delivers; keep the gauge current from the table.
            if let Some(backlog) = outbox::backlog(&self.pool, url).await? {
                self.metrics.set_backlog(label, backlog);
            }
            return Ok(Some(self.lease / 3));
        };
        self.metrics.set_backlog(label, leased.backlog());
        if !leased.wait.is_zero() {
            return Ok(Some(leased.wait));
        }
        match stall::pending_gap(&self.pool, url).await? {
            Some(gap) => return self.announce_gap(url, label, &leased, gap).await,
            None => self.metrics.set_stalled(label, false),
        }
        let feed = match changes::changes_after(&self.pool, leased.cursor, BATCH).await {
            Ok(feed) => feed,
            Err(FeedError::Gone { oldest, .. }) => {
                let lost = oldest - 1 - leased.cursor;
                let message = format!(
                    "{lost} changes expired before they could be delivered; continuing after {}",
                    oldest - 1
                );
                tracing::warn!(target_url = %label, "notify: {message}");
                outbox::skip_to(&self.pool, url, &self.owner, oldest - 1, &message).await?;
                return Ok(None);
            }
            Err(FeedError::Registry(error)) => {
                tracing::warn!(target_url = %label, %error, "notify: cannot read the change log");
                return Ok(Some(Duration::from_secs(1)));
            }
        };
        if feed.items.is_empty() {
            return Ok(Some(self.lease / 3));
        }
        let mut backlog = leased.backlog();
        for change in &feed.items {
            match self.send(url, label, change).await {
                Sent::Acknowledged => {
                    if !outbox::advance(&self.pool, url, &self.owner, change.seq, self.lease)
                        .await?
                    {
                        tracing::warn!(target_url = %label, "notify: lease lost; another replica delivers");
                        return Ok(Some(self.lease / 3));
                    }
                    backlog -= 1;
                    self.metrics.set_backlog(label, backlog.max(0));
                }
                Sent::Failed(error) => {
                    let retry_in = self.backoff.delay(leased.attempts + 1);
                    tracing::warn!(
                        target_url = %label,
                        seq = change.seq,
                        %error,
                        retry_in = %humantime::format_duration(retry_in),
                        "notify: delivery failed"
                    );
                    outbox::fail(&self.pool, url, &self.owner, &error, retry_in).await?;
                    return Ok(Some(retry_in));
                }
            }
        }
        Ok(None)
    }

    /// POSTs one change, signed, within the timeout; only a 2xx counts.
    /// What a failure says never holds more of the URL than `label`.
    async fn send(&self, url: &str, label: &str, change: &Change) -> Sent {
        match self.exchange(url, change).await {
            Sent::Failed(error) => Sent::Failed(error.replace(url, label)),
            sent => sent,
        }
    }

    async fn exchange(&self, url: &str, change: &Change) -> Sent {
        let body = match (self.encode)(change) {
            Ok(body) => body,
            Err(e) => return Sent::Failed(format!("cannot encode change {}: {e}", change.seq)),
        };
        self.post(url, change.seq, sign::delivery_id(url, change.seq), body)
            .await
    }

    /// POSTs the `gap` notification of a stalled target: one, naming the
    /// first and last `seq` it missed; its `X-Roster-Seq` is the last.
    async fn send_gap(&self, url: &str, (first, last): (i64, i64)) -> Sent {
        let body = stall::gap_body(first, last, chrono::Utc::now());
        let delivery = format!("gap-{first}-{}", sign::delivery_id(url, last));
        self.post(url, last, delivery, body).await
    }

    /// Tells a stalled target what it missed. Returns the pause before the
    /// next round (`None`: go on at once).
    async fn announce_gap(
        &self,
        url: &str,
        label: &str,
        leased: &outbox::Leased,
        gap: (i64, i64),
    ) -> Result<Option<Duration>, sqlx::Error> {
        self.metrics.set_stalled(label, true);
        match self.send_gap(url, gap).await {
            Sent::Acknowledged => {
                if !stall::gap_delivered(&self.pool, url, &self.owner).await? {
                    return Ok(Some(self.lease / 3));
                }
                self.metrics.set_stalled(label, false);
                Ok(None)
            }
            Sent::Failed(error) => {
                let error = error.replace(url, label);
                let retry_in = self.backoff.delay(leased.attempts + 1);
                tracing::warn!(target_url = %label, %error, "notify: gap notification failed");
                outbox::fail(&self.pool, url, &self.owner, &error, retry_in).await?;
                Ok(Some(retry_in))
            }
        }
    }

    /// POSTs one body, signed, within the timeout; only a 2xx counts.
    async fn post(&self, url: &str, seq: i64, delivery: String, body: String) -> Sent {
        let secret = self.secret.expose_secret().as_bytes();
        // Taken now, not when the change was written: a retry is signed
        // afresh, so a receiver's age limit only refuses captured requests.
        let timestamp = chrono::Utc::now().timestamp();
        let request = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::USER_AGENT, "roster")
            .header(
                "X-Roster-Signature-256",
                sign::signature(secret, &delivery, timestamp, body.as_bytes()),
            )
            .header(
                "X-Roster-Body-Signature-256",
                sign::body_signature(secret, body.as_bytes()),
            )
            .header("X-Roster-Delivery", delivery)
            .header("X-Roster-Timestamp", timestamp.to_string())
            .header("X-Roster-Seq", seq.to_string())
            .body(OctoBody::from(body));
        let request = match request {
            Ok(request) => request,
            Err(e) => return Sent::Failed(format!("cannot build the request: {e}")),
        };
        let exchange = async {
            // Only the status counts; the body is not read, so a target
            // cannot make Roster hold a large answer.
            let response = self.transport.send(request).await?;
            Ok::<_, octocrab::Error>(response.status())
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Err(_) => Sent::Failed(format!(
                "no answer within {}",
                humantime::format_duration(self.timeout)
            )),
            Ok(Err(e)) => Sent::Failed(format!("cannot send: {}", error_chain(&e))),
            Ok(Ok(status)) if status.is_success() => Sent::Acknowledged,
            Ok(Ok(status)) if status.is_redirection() => Sent::Failed(format!(
                "answered {status}; redirects are not followed, configure the final URL"
            )),
            Ok(Ok(status)) => Sent::Failed(format!("answered {status}")),
        }
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
