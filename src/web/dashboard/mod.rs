//! The dashboard: server-rendered pages for people (docs/contract.md#http-routes), from the same
//! registry queries as the API. Templates live in `templates/`; askama
//! escapes every value, and repository data is never marked safe.
//!
//! Every page works without JavaScript; `/static/refresh.js` only keeps an
//! open page current. Signed-in operators (see [`crate::web::session`]) get
//! resync forms, each guarded against cross-site requests.

mod action;
mod change_row;
mod change_stream;
mod chrome;
pub(super) mod deliveries;
mod entry_view;
mod error_page;
pub(super) mod forms;
pub(super) mod history;
mod notices;
pub(super) mod overview;
pub(super) mod owner_view;
pub(super) mod owners;
mod picture;
pub(super) mod project;
pub(super) mod projects;
pub(super) mod repo;
pub(super) mod signin;
mod svg_canvas;
pub(super) mod systems;

pub(super) use error_page::PageError;
