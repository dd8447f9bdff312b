//! Roster keeps an organisation's project registry in sync with the
//! `project.yaml` files in its repositories.

pub mod app;
pub mod check_command;
pub mod checks;
pub mod config;
pub mod controller;
pub mod db;
pub mod directory;
pub mod github;
pub mod installation_id;
pub mod intake;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod notify;
pub mod project;
pub mod registry;
pub mod setup;
pub mod shutdown;
pub mod source;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod web;
