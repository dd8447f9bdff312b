//! Every integration test, in one binary: one link instead of one per
//! file, which is most of a test build's time on two cores. Each file is a
//! module named after it; `cargo test --test suite NAME::` runs one file.

mod support;

mod auth_throttle;
mod browser;
mod changes;
mod changes_api;
mod checks;
mod cli_config;
mod crash_recovery;
mod dashboard;
mod deploy_manifests;
mod dir_bounds;
mod dir_source_e2e;
mod embedded_pg;
mod free_pushes;
mod fuzz_regressions;
mod github_batch_read;
mod github_batches;
mod github_e2e;
mod github_outages;
mod github_secondary_limit;
mod github_source;
mod github_start;
mod graphql_schema;
mod holds;
mod hostile_file_e2e;
mod http_api;
mod lease_loss;
mod listing_requests;
mod module_graph;
mod notify;
mod notify_crash;
mod outages;
mod pg_queue;
mod project_schema;
mod redelivery;
mod registry;
mod registry_bounds;
mod registry_waiting;
mod replicas;
mod secrets_in_logs;
mod sessions;
mod setup;
mod setup_browser;
mod slow_clients;
mod table_owners;
mod webhook_bounds;
mod webhooks;
