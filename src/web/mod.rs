//! HTTP: the read and write API, the dashboard, probes and `/metrics`
//! (SPEC §5, §7). The webhook route lives with the GitHub code and is merged
//! in through [`router_with`].

pub mod api_changes;
mod api_deliveries;
mod api_holds;
mod api_projects;
mod api_repos;
pub(crate) mod api_write;
mod assets;
mod auth;
pub mod client;
mod dashboard;
pub mod error;
mod extract;
pub mod forwarded;
mod health;
mod metrics_route;
mod origin;
mod params;
mod revocation;
pub mod serve;
mod session;
pub mod state;
pub mod throttle;
mod view;

pub use error::ApiError;
pub use state::{router, router_with, AppState, BODY_LIMIT, REQUEST_TIMEOUT};
