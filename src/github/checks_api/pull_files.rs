//! The paths a pull request changes, as GitHub lists them
//! (`GET /repos/{o}/{r}/pulls/{n}/files`): one request per 100 files,
//! following `Link: rel="next"`, at most [`MAX_PAGES`] pages. The
//! compare API was not chosen: it returns the commits too (bytes a check
//! does not need) and at most 300 files without a way to page further.

use serde::Deserialize;

use super::ChecksApi;
use crate::github::http::{join, next_link, CallError};
use crate::source::InstallationId;

/// Files GitHub lists per page at most.
pub const PER_PAGE: usize = 100;
/// Pages read at most: a pull request changing more than 1,000 files is
/// previewed on the project files among the first 1,000.
pub const MAX_PAGES: usize = 10;

/// What a pull request changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedPaths {
    /// Every path the pull request adds, modifies or removes (a renamed
    /// file's old path too), in GitHub's order.
    pub paths: Vec<String>,
    /// The paths the pull request removes (a renamed file's old path too):
    /// absent at its head, so they need no read.
    pub gone: Vec<String>,
    /// Whether the listing was read to its end ([`MAX_PAGES`] pages at most).
    pub complete: bool,
}

#[derive(Deserialize)]
struct ChangedFile {
    filename: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    previous_filename: Option<String>,
}

impl ChecksApi {
    /// The paths pull request `number` of `owner/name` changes; `spend`
    /// takes the budget of each page after the first (the caller took the
    /// first one's).
    pub async fn pull_request_paths(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        number: i32,
        spend: impl Fn() -> Result<(), CallError>,
    ) -> Result<ChangedPaths, CallError> {
        const WHAT: &str = "GET pulls/{number}/files";
        let number = number.to_string();
        let mut url = join(
            &self.client.api_url,
            ["repos", owner, name, "pulls", &number, "files"],
        )?;
        url.query_pairs_mut()
            .append_pair("per_page", &PER_PAGE.to_string());
        let mut changed = ChangedPaths::default();
        // Paths at the head: one renamed away and added anew is not gone.
        let mut present = Vec::new();
        for page in 0..MAX_PAGES {
            if page > 0 {
                spend()?;
            }
            let reply = self
                .client
                .get(installation, &url, "application/vnd.github+json", false)
                .await?;
            if !(200..300).contains(&reply.status) {
                return Err(CallError::Status {
                    what: WHAT.to_owned(),
                    status: reply.status,
                    message: reply.message(),
                });
            }
            let files: Vec<ChangedFile> =
                serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(WHAT, e))?;
            for file in files {
                if let Some(previous) = file.previous_filename {
                    changed.gone.push(previous.clone());
                    changed.paths.push(previous);
                }
                if file.status == "removed" {
                    changed.gone.push(file.filename.clone());
                } else {
                    present.push(file.filename.clone());
                }
                changed.paths.push(file.filename);
            }
            let next = reply.header("link").and_then(next_link);
            match next.map(|n| url::Url::parse(&n)) {
                None => {
                    changed.complete = true;
                    break;
                }
                Some(Ok(next)) if next.origin() == url.origin() => url = next,
                Some(_) => return Err(CallError::unexpected(WHAT, "a next page on another host")),
            }
        }
        changed.gone.retain(|path| !present.contains(path));
        Ok(changed)
    }
}
