//! Helpers shared by the end-to-end tests.
pub mod http;
pub mod receiver;
pub mod router;
pub mod server;
