//! The test kit shared by the integration tests and benchmarks: a fake
//! GitHub, the real server as a child process, HTTP helpers, proxies that
//! stall or cut connections, and a seed that fills a registry through its
//! owners. Each test binary uses part of it, hence the one `dead_code`
//! allowance here.
#![allow(dead_code)]

pub mod cdp;
pub mod fake_github;
pub mod github_app;
pub mod github_server;
pub mod http;
pub mod monorepo_server;
pub mod pg_proxy;
pub mod pull_requests;
pub mod receiver;
pub mod router;
pub mod seed;
pub mod server;
pub mod setup_flow;
pub mod stall_proxy;
