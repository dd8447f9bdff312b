//! What every route shares.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use secrecy::SecretString;
use sqlx::PgPool;

use super::graph_reads::GraphReads;
use super::throttle::FailureThrottle;
use crate::db::queue::PgQueue;
use crate::metrics::Metrics;
use crate::project::relations::RelationsMode;

/// Shared by every handler; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub queue: Arc<PgQueue>,
    pub metrics: Arc<Metrics>,
    /// Everything `/metrics` exposes (Roster's and the controller's metrics).
    pub registry: Arc<Registry>,
    /// The write API's bearer token; `None` turns the write API off (403).
    pub api_token: Option<SecretString>,
    /// Base of links to repositories, e.g. `https://github.com`; `None` for
    /// sources without a web page (the local folder).
    pub github_web_url: Option<String>,
    /// Path of the project file inside a repository (`ROSTER_PROJECT_FILE`),
    /// for the dashboard's link to it.
    pub project_file: String,
    /// Period of the org-wide listing (`ROSTER_RESYNC_INTERVAL`), for the
    /// dashboard's "next listing due".
    pub resync_interval: Duration,
    /// Wrong tokens per client, at the write API and the sign-in form alike.
    pub auth_throttle: Arc<FailureThrottle>,
    /// Whether `X-Forwarded-*` headers describe the client
    /// (`ROSTER_TRUST_PROXY`); see [`crate::web::forwarded`].
    pub trust_proxy: bool,
    /// How dependencies are checked (`ROSTER_RELATIONS`): under `off` an
    /// unknown one is no warning.
    pub relations: RelationsMode,
    /// The places to read a graph (`GET /api/v1/graph`), a few at once.
    pub graph_reads: GraphReads,
}

impl axum::extract::FromRef<AppState> for super::throttle_key::TrustProxy {
    fn from_ref(state: &AppState) -> Self {
        Self(state.trust_proxy)
    }
}
