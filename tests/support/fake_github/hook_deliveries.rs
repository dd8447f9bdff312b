//! The App's webhook delivery log, as GitHub keeps it: every attempt to
//! deliver an event to the App's webhook URL, newest first
//! (`GET /app/hook/deliveries`, cursor pagination through `Link`), and the
//! route that asks for one more attempt
//! (`POST /app/hook/deliveries/{id}/attempts`, answered 202).
//!
//! Tests write the log with [`FakeGithub::log_delivery`] and friends. A
//! redelivery request is recorded; when a target is set
//! ([`FakeGithub::set_redelivery_target`]) the fake also sends the stored
//! payload there, signed like GitHub does, and logs that attempt with the
//! status it got (0 when the connection failed), as GitHub would.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::Request;
use chrono::{DateTime, SecondsFormat, Utc};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

use super::rest::Answer;
use super::{routes, FakeGithub};

/// How long GitHub keeps deliveries and accepts redelivery requests.
pub const RETENTION: Duration = Duration::from_secs(3 * 24 * 3600);

/// One attempt in the log.
#[derive(Debug, Clone)]
pub struct LoggedDelivery {
    /// The attempt's own id (what `POST .../{id}/attempts` takes).
    pub id: i64,
    /// The event's id, the `X-GitHub-Delivery` header; shared by every
    /// attempt to deliver that event.
    pub guid: String,
    pub delivered_at: SystemTime,
    pub redelivery: bool,
    /// What the App's URL answered; 0 when it could not be reached.
    pub status_code: u16,
    pub event: String,
    pub action: Option<String>,
    pub installation_id: Option<i64>,
    pub repository_id: Option<i64>,
    /// The body GitHub sent (and sends again on a redelivery).
    pub payload: Vec<u8>,
}

/// A delivery to put in the log (see [`FakeGithub::log_delivery`]).
#[derive(Debug, Clone)]
pub struct HookDelivery {
    pub event: String,
    pub action: Option<String>,
    pub status_code: u16,
    /// How long ago it was attempted.
    pub age: Duration,
    pub installation_id: Option<i64>,
    pub repository_id: Option<i64>,
    pub payload: Vec<u8>,
    /// The event's id; a fresh one when `None`.
    pub guid: Option<String>,
}

impl HookDelivery {
    /// A delivery of `event` a minute ago that the App's URL answered with
    /// `status_code`.
    pub fn new(event: &str, status_code: u16) -> Self {
        Self {
            event: event.to_owned(),
            action: None,
            status_code,
            age: Duration::from_secs(60),
            installation_id: None,
            repository_id: None,
            payload: b"{}".to_vec(),
            guid: None,
        }
    }

    pub fn action(mut self, action: &str) -> Self {
        self.action = Some(action.to_owned());
        self
    }

    pub fn age(mut self, age: Duration) -> Self {
        self.age = age;
        self
    }

    pub fn installation(mut self, id: i64) -> Self {
        self.installation_id = Some(id);
        self
    }

    pub fn repository(mut self, id: i64) -> Self {
        self.repository_id = Some(id);
        self
    }

    pub fn payload(mut self, payload: Vec<u8>) -> Self {
        self.payload = payload;
        self
    }

    pub fn guid(mut self, guid: &str) -> Self {
        self.guid = Some(guid.to_owned());
        self
    }
}

/// Where redeliveries go.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub secret: String,
}

/// The log and what was asked of it. Shared behind its own lock so a
/// redelivery in flight can log its attempt without the world's lock.
#[derive(Debug, Default)]
pub struct HookLog {
    /// In the order they were added.
    pub deliveries: Vec<LoggedDelivery>,
    /// Ids named by `POST .../attempts`, in order.
    pub redelivery_requests: Vec<i64>,
    pub target: Option<Target>,
    next_id: i64,
}

impl HookLog {
    fn push(&mut self, delivery: HookDelivery, redelivery: bool) -> LoggedDelivery {
        self.next_id += 1;
        let id = 9_000_000_000 + self.next_id;
        let guid = delivery.guid.unwrap_or_else(|| {
            format!("{:08x}-0000-11ee-8000-{:012x}", id, fastrand::u64(..) >> 16)
        });
        let logged = LoggedDelivery {
            id,
            guid,
            delivered_at: SystemTime::now()
                .checked_sub(delivery.age)
                .unwrap_or(SystemTime::UNIX_EPOCH),
            redelivery,
            status_code: delivery.status_code,
            event: delivery.event,
            action: delivery.action,
            installation_id: delivery.installation_id,
            repository_id: delivery.repository_id,
            payload: delivery.payload,
        };
        self.deliveries.push(logged.clone());
        logged
    }

    /// Newest first, as GitHub lists them.
    fn newest_first(&self) -> Vec<&LoggedDelivery> {
        let mut all: Vec<&LoggedDelivery> = self.deliveries.iter().collect();
        all.sort_by_key(|d| std::cmp::Reverse((d.delivered_at, d.id)));
        all
    }
}

/// Locks a log; a test that panicked while holding it already failed.
pub fn lock(log: &Mutex<HookLog>) -> MutexGuard<'_, HookLog> {
    log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Routes served here need the App's JWT.
pub fn is_app_route(route: &str) -> bool {
    route == routes::HOOK_DELIVERIES || route == routes::HOOK_ATTEMPTS
}

/// Answers one of this module's routes (see [`is_app_route`]).
pub fn answer(
    log: &Arc<Mutex<HookLog>>,
    base: &str,
    route: &str,
    segments: &[String],
    path: &str,
    query: &str,
) -> Answer {
    if route == routes::HOOK_DELIVERIES {
        list(&lock(log), base, path, query)
    } else {
        match segments.get(3).and_then(|s| s.parse::<i64>().ok()) {
            Some(id) => attempt(log, id),
            None => Answer::not_found(),
        }
    }
}

/// `GET /app/hook/deliveries?per_page=&cursor=`.
fn list(log: &HookLog, base: &str, path: &str, query: &str) -> Answer {
    let param = |name: &str| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let per_page = param("per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let all = log.newest_first();
    let start = match param("cursor") {
        None => 0,
        Some(cursor) => {
            let after = cursor
                .strip_prefix("v1_")
                .and_then(|id| id.parse::<i64>().ok());
            match after.and_then(|id| all.iter().position(|d| d.id == id)) {
                Some(position) => position + 1,
                None => return Answer::message(422, "Invalid cursor"),
            }
        }
    };
    let page: Vec<&LoggedDelivery> = all.iter().skip(start).take(per_page).copied().collect();
    let items: Vec<Value> = page.iter().map(|d| item_json(d)).collect();
    let mut answer = Answer::json(200, Value::Array(items));
    if start + page.len() < all.len() {
        if let Some(last) = page.last() {
            let next = format!("{base}{path}?per_page={per_page}&cursor=v1_{}", last.id);
            answer
                .headers
                .push(("link".into(), format!("<{next}>; rel=\"next\"")));
        }
    }
    answer
}

fn item_json(d: &LoggedDelivery) -> Value {
    let at: DateTime<Utc> = d.delivered_at.into();
    json!({
        "id": d.id,
        "guid": d.guid,
        "delivered_at": at.to_rfc3339_opts(SecondsFormat::Secs, true),
        "redelivery": d.redelivery,
        "duration": 0.27,
        "status": status_text(d.status_code),
        "status_code": d.status_code,
        "event": d.event,
        "action": d.action,
        "installation_id": d.installation_id,
        "repository_id": d.repository_id,
        "throttled_at": Value::Null,
    })
}

fn status_text(code: u16) -> String {
    match code {
        0 => "failed to connect".to_owned(),
        200..=299 => "OK".to_owned(),
        _ => format!("Invalid HTTP Response: {code}"),
    }
}

/// `POST /app/hook/deliveries/{id}/attempts`: 202, and the redelivery
/// when a target is set.
fn attempt(log: &Arc<Mutex<HookLog>>, id: i64) -> Answer {
    let (original, target) = {
        let mut guard = lock(log);
        let Some(original) = guard.deliveries.iter().find(|d| d.id == id).cloned() else {
            return Answer::not_found();
        };
        let expired = original
            .delivered_at
            .elapsed()
            .map(|age| age > RETENTION)
            .unwrap_or(false);
        if expired {
            return Answer::message(422, "Delivery is too old to be redelivered");
        }
        guard.redelivery_requests.push(id);
        (original, guard.target.clone())
    };
    if let Some(target) = target {
        let log = log.clone();
        tokio::spawn(async move {
            let status_code = send(&target, &original).await;
            let again = HookDelivery {
                event: original.event,
                action: original.action,
                status_code,
                age: Duration::ZERO,
                installation_id: original.installation_id,
                repository_id: original.repository_id,
                payload: original.payload,
                guid: Some(original.guid),
            };
            lock(&log).push(again, true);
        });
    }
    Answer::json(202, json!({}))
}

/// Sends `delivery` to `target` as GitHub does; the status, 0 on failure.
async fn send(target: &Target, delivery: &LoggedDelivery) -> u16 {
    let signature = roster::intake::sign(&target.secret, &delivery.payload);
    let request = Request::post(&target.url)
        .header("content-type", "application/json")
        .header("user-agent", "GitHub-Hookshot/fake")
        .header("x-github-event", delivery.event.as_str())
        .header("x-github-delivery", delivery.guid.as_str())
        .header("x-github-hook-id", "1")
        .header("x-hub-signature-256", signature)
        .body(Body::from(delivery.payload.clone()));
    let Ok(request) = request else {
        return 0;
    };
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    match tokio::time::timeout(Duration::from_secs(10), client.request(request)).await {
        Ok(Ok(response)) => response.status().as_u16(),
        _ => 0,
    }
}

impl FakeGithub {
    fn hook_log(&self) -> Arc<Mutex<HookLog>> {
        self.shared.world().hook_log.clone()
    }

    /// Adds an attempt to the delivery log; what was logged.
    /// It counts as a redelivery when its guid is already in the log.
    pub fn log_delivery(&self, delivery: HookDelivery) -> LoggedDelivery {
        let log = self.hook_log();
        let mut log = lock(&log);
        let redelivery = delivery
            .guid
            .as_ref()
            .is_some_and(|guid| log.deliveries.iter().any(|d| &d.guid == guid));
        log.push(delivery, redelivery)
    }

    /// Logs another attempt for the event of `guid` (a redelivery).
    pub fn log_redelivery(&self, guid: &str, status_code: u16, age: Duration) -> LoggedDelivery {
        let log = self.hook_log();
        let mut log = lock(&log);
        let original = log.deliveries.iter().find(|d| d.guid == guid).cloned();
        let again = HookDelivery {
            guid: Some(guid.to_owned()),
            status_code,
            age,
            ..match original {
                Some(o) => HookDelivery {
                    event: o.event,
                    action: o.action,
                    installation_id: o.installation_id,
                    repository_id: o.repository_id,
                    payload: o.payload,
                    ..HookDelivery::new("", 0)
                },
                None => HookDelivery::new("push", 0),
            }
        };
        log.push(again, true)
    }

    /// Redeliveries are sent to `url`, signed with `secret`.
    pub fn set_redelivery_target(&self, url: &str, secret: &str) {
        lock(&self.hook_log()).target = Some(Target {
            url: url.to_owned(),
            secret: secret.to_owned(),
        });
    }

    /// The ids asked for redelivery, in order.
    pub fn redelivery_requests(&self) -> Vec<i64> {
        lock(&self.hook_log()).redelivery_requests.clone()
    }

    /// Every attempt in the log, in the order they were added.
    pub fn hook_deliveries(&self) -> Vec<LoggedDelivery> {
        lock(&self.hook_log()).deliveries.clone()
    }
}
