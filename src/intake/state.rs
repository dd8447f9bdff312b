//! What the webhook route needs: the settings it is built from, and what
//! it builds from them once (the turns to read a body, the group commit).

use std::sync::Arc;

use secrecy::SecretString;
use sqlx::PgPool;

use super::admission::{Admission, WebhookLimits};
use super::free_push::FreePushes;
use super::group::GroupCommit;
use crate::db::queue::PgQueue;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;

/// What the webhook route needs.
#[derive(Clone)]
pub struct WebhookState {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub secret: SecretString,
    pub metrics: Arc<Metrics>,
    /// How many bodies are read at once, and how long the rest wait.
    pub limits: WebhookLimits,
    /// How pushes that left the project file alone are decided without a
    /// read; `None`: every push is read.
    pub free_pushes: Option<FreePushes>,
    /// The server's shutdown: the group commit's writers are spawned
    /// through it, and end once the route is gone.
    pub shutdown: Shutdown,
}

/// The state and the turns it hands out: the route's axum state, shared by
/// the extractor of verified deliveries and the handler.
pub struct Route {
    pub state: WebhookState,
    /// The turns to read a body, taken before its first byte.
    pub admission: Arc<Admission>,
    /// Commits the deliveries that arrive together in one transaction.
    pub group: GroupCommit,
}
