//! Setup in one click: with no GitHub App configured, `serve` offers a
//! setup page that registers Roster's App through GitHub's manifest flow
//! (`app.yml`, the addresses filled in), stores it sealed with
//! `ROSTER_SECRET_KEY` in PostgreSQL and starts the GitHub source. The
//! flow: a token in the log, one for every replica, opens the page (until
//! it is used for the form to GitHub or an App is stored; it survives a
//! reload and the back button, which a token spent on first use would
//! not); a signed, single-use,
//! one-hour `state` ties GitHub's callback to the form this Roster issued.

pub mod asked;
mod conversion;
mod key;
mod manifest;
mod pages;
pub mod print_env;
pub mod routes;
mod seal;
mod state;
pub mod store;

pub(crate) use key::create_private;
pub use key::{random_hex, KeyError, SecretKey, KEY_FILE};
pub use manifest::{manifest_json, PublicUrl};
pub use routes::SetupState;
pub use state::{issue as issue_state, verify as verify_state};
