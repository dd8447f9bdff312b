//! What the overview says about installations above everything else: the
//! App may not write checks there, owner checking is off there (GitHub
//! refused its teams or members), or it lacks permissions and events
//! Roster asks for. Each is one line per installation, said until it is
//! fixed.

use super::error_page::PageError;
use crate::directory::db::AccountStatus;
use crate::directory::DirectoryDb;
use crate::registry::check_records::check_runs::{denied_installations, ChecksDenied};
use crate::setup::asked::{lacking, Lacking};
use crate::web::error::ApiError;
use crate::web::state::AppState;

/// The installations' notices, each kind in installation order.
pub struct Notices {
    /// GitHub refuses the App's check runs (no `checks: write`).
    pub checks_denied: Vec<ChecksDenied>,
    /// Owners are not checked: GitHub refused the teams or members.
    pub owners_off: Vec<AccountStatus>,
    /// Permissions and events `app.yml` asks for that are not granted.
    pub lacking: Vec<Lacking>,
}

impl Notices {
    pub async fn read(state: &AppState) -> Result<Self, PageError> {
        let unavailable =
            |e: sqlx::Error| ApiError::unavailable("notices: installation query failed", &e);
        let owners_off = DirectoryDb::new(state.pool.clone())
            .accounts()
            .await
            .map_err(unavailable)?
            .into_iter()
            .filter(|a| a.off_reason.is_some() && !a.personal)
            .collect();
        let web = state
            .github_web_url
            .as_deref()
            .unwrap_or("https://github.com");
        let lacking = crate::github::grants::all(&state.pool)
            .await
            .map_err(unavailable)?
            .iter()
            .filter_map(|grant| lacking(grant, web))
            .collect();
        Ok(Self {
            checks_denied: denied_installations(&state.pool).await?,
            owners_off,
            lacking,
        })
    }
}
