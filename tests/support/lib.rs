//! The test kit shared by the integration tests and benchmarks: a fake
//! GitHub, the real server as a child process, HTTP helpers, proxies that
//! stall or cut connections, a seed that fills a registry through its
//! owners, and the rounds and yardsticks the benchmarks measure with.
//!
//! It is a crate of its own (a dev-dependency of `roster`), so the test
//! binary and every benchmark link one compiled copy instead of each
//! compiling these files again, and the library's own build never sees it.

pub mod bench_mode;
pub mod cdp;
pub mod example_org;
pub mod fake_github;
pub mod free_pushes;
pub mod github_app;
pub mod github_counts;
pub mod github_server;
pub mod http;
pub mod intake;
pub mod monorepo_server;
pub mod pg_proxy;
pub mod pgbench;
pub mod pull_requests;
pub mod receiver;
pub mod registry;
pub mod router;
pub mod seed;
pub mod server;
pub mod setup_flow;
pub mod side_by_side;
pub mod stall_proxy;
pub mod statement_count;
