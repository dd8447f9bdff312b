//! HTTP: the read and write API, the dashboard, probes and `/metrics`
//! (docs/contract.md#http-routes, docs/operations.md#metrics). Every route
//! Roster serves is declared in `router.rs`, the webhook's and setup mode's
//! too (their handlers live with the GitHub code and the setup); the API
//! and dashboard handlers share [`AppState`]. Every JSON shape an answer
//! takes is declared in [`json`], made from the plain rows the registry's
//! reads and the delivery log (`delivery_log.rs`, the one place `web`
//! reads it) return.

pub mod api_changes;
mod api_holds;
mod api_owners;
mod api_projects;
mod api_relations;
mod api_repos;
mod api_write;
pub(crate) mod assets;
mod auth;
mod backstage;
mod dashboard;
pub mod delivery_log;
pub mod error;
pub(crate) mod escape;
mod extract;
pub mod forwarded;
pub mod graph_reads;
pub(crate) mod health;
mod html_budget;
mod input_check;
pub mod json;
pub mod long_polls;
mod metrics_route;
mod openapi;
mod origin;
mod params;
pub mod privacy;
mod resync;
mod revocation;
pub mod router;
pub mod serve;
mod session;
pub mod state;
pub mod throttle;
pub mod throttle_key;
mod view;

pub use error::ApiError;
pub use router::{router, router_with, BODY_LIMIT, REQUEST_TIMEOUT};
pub use state::AppState;
