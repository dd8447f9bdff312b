//! The change stream at the top of `GET /changes`: every change of the
//! organisation's registry, newest first, filtered by kind, cause and
//! owner, a page at a time (`before=SEQ` for older ones).

use serde::Deserialize;

use super::change_row::{page_rows, ChangeRow, HALF_PAGE};
use crate::registry::changes::{self, Cause, ChangeKind, StreamFilter};
use crate::web::error::ApiError;
use crate::web::privacy::Privacy;
use crate::web::state::AppState;
use crate::web::view::href_with;

/// Changes one page of the stream shows.
const STREAM_ROWS: i64 = 50;

/// `?kind=&cause=&owner=&before=`, taken as text and checked here.
#[derive(Debug, Default, Deserialize)]
pub struct StreamParams {
    pub kind: Option<String>,
    pub cause: Option<String>,
    pub owner: Option<String>,
    pub before: Option<String>,
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

impl StreamParams {
    /// The filter these ask for, or what is wrong with them.
    pub fn to_filter(&self) -> Result<StreamFilter, ApiError> {
        let kind = given(&self.kind)
            .map(|v| {
                ChangeKind::parse(v).ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "kind: unknown value {v:?} (expected one of created, changed, removed)"
                    ))
                })
            })
            .transpose()?;
        let cause = given(&self.cause)
            .map(|v| {
                let known = Cause::ALL.map(Cause::as_str);
                if known.contains(&v) {
                    Ok(v.to_owned())
                } else {
                    Err(ApiError::BadRequest(format!(
                        "cause: unknown value {v:?} (expected one of {})",
                        known.join(", ")
                    )))
                }
            })
            .transpose()?;
        let before = given(&self.before)
            .map(|v| {
                v.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    ApiError::BadRequest(format!("before: {v:?} is not a seq (a whole number)"))
                })
            })
            .transpose()?;
        Ok(StreamFilter {
            kind,
            cause,
            owner: given(&self.owner).map(str::to_owned),
            before,
            limit: STREAM_ROWS,
        })
    }
}

/// One page of the stream, with what the filter form and the pager need.
pub struct StreamView {
    pub rows: Vec<ChangeRow>,
    pub kind: &'static str,
    pub cause: String,
    pub owner: String,
    pub kinds: [&'static str; 3],
    pub causes: [&'static str; Cause::ALL.len()],
    pub filtered: bool,
    /// Set when this is not the newest page.
    pub paged: bool,
    pub first_href: String,
    pub next_href: Option<String>,
}

/// Reads the page `params` ask for.
pub async fn load(
    state: &AppState,
    params: &StreamParams,
    privacy: &Privacy,
) -> Result<StreamView, ApiError> {
    let filter = params.to_filter()?;
    let page = changes::stream(&state.pool, &filter).await?;
    let privacy = match filter.owner {
        Some(_) => privacy.finding_by_owner(),
        None => privacy.clone(),
    };
    // Half the page: the recently removed take the other half.
    let (rows, next) = page_rows(page, &privacy, state.github_web_url.as_deref(), HALF_PAGE);
    let kind = filter.kind.map_or("", ChangeKind::as_str);
    let cause = filter.cause.clone().unwrap_or_default();
    let owner = filter.owner.clone().unwrap_or_default();
    let pairs = [
        ("kind", Some(kind)),
        ("cause", Some(cause.as_str())),
        ("owner", Some(owner.as_str())),
    ];
    let next_href = next.map(|seq| seq.to_string()).map(|seq| {
        let mut more = pairs.to_vec();
        more.push(("before", Some(&seq)));
        href_with("/changes", &more)
    });
    Ok(StreamView {
        rows,
        first_href: href_with("/changes", &pairs),
        filtered: !(kind.is_empty() && cause.is_empty() && owner.is_empty()),
        paged: filter.before.is_some(),
        kinds: [
            ChangeKind::Created,
            ChangeKind::Changed,
            ChangeKind::Removed,
        ]
        .map(ChangeKind::as_str),
        causes: Cause::ALL.map(Cause::as_str),
        kind,
        cause,
        owner,
        next_href,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kind: &str, cause: &str, owner: &str, before: &str) -> StreamParams {
        let text = |v: &str| Some(v.to_owned());
        StreamParams {
            kind: text(kind),
            cause: text(cause),
            owner: text(owner),
            before: text(before),
        }
    }

    #[test]
    fn to_filter_should_take_each_filter_and_leave_blanks_open() {
        let filter = params("removed", "repo_removed", " payments ", "42")
            .to_filter()
            .unwrap();
        assert_eq!(filter.kind, Some(ChangeKind::Removed));
        assert_eq!(filter.cause.as_deref(), Some("repo_removed"));
        assert_eq!(filter.owner.as_deref(), Some("payments"));
        assert_eq!(filter.before, Some(42));
        let open = params("", " ", "", "").to_filter().unwrap();
        assert_eq!(
            open,
            StreamFilter {
                limit: STREAM_ROWS,
                ..StreamFilter::default()
            }
        );
    }

    #[test]
    fn to_filter_should_name_the_bad_value_and_the_good_ones() {
        let error = |p: StreamParams| p.to_filter().unwrap_err().to_string();
        assert!(error(params("moved", "", "", ""))
            .contains("expected one of created, changed, removed"));
        assert!(error(params("", "cron", "", "")).contains("expected one of push, listing"));
        assert!(error(params("", "", "", "-3")).contains("before:"));
        assert!(error(params("", "", "", "x")).contains("before:"));
    }
}
