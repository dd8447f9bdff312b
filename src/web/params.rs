//! Query-string parameters of the lists, parsed once into the registry's
//! filters; the API and the dashboard share them so they agree (docs/contract.md#http-routes).
//!
//! Every value is taken as text and checked here, so a bad value gets a
//! message naming the parameter instead of a deserializer's wording.

use serde::Deserialize;

use super::error::ApiError;
use crate::project::ProjectName;
use crate::registry::read_models::relations::MAX_DEPTH;
use crate::registry::{ProjectFilter, RepoFilter, Status, DEFAULT_LIMIT, MAX_LIMIT};

/// `?status=&q=&limit=&cursor=` of `/api/v1/repos` and `/`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RepoParams {
    /// Only repositories with this status.
    #[param(value_type = Option<RepoStatus>, inline)]
    pub status: Option<String>,
    /// Case-insensitive part of `owner/name`.
    pub q: Option<String>,
    /// At most this many (1 to 1000, default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl RepoParams {
    pub fn to_filter(&self) -> Result<RepoFilter, ApiError> {
        let status = non_empty(&self.status).map(parse_status).transpose()?;
        Ok(RepoFilter {
            status,
            q: non_empty(&self.q).map(str::to_owned),
            limit: parse_limit(non_empty(&self.limit))?,
            cursor: non_empty(&self.cursor).map(str::to_owned),
            ..RepoFilter::default()
        })
    }
}

/// `?owner=&tag=&q=&limit=&cursor=` of `/api/v1/projects` and `/projects`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProjectParams {
    /// Only entries with this exact owner.
    pub owner: Option<String>,
    /// Only entries carrying this tag.
    pub tag: Option<String>,
    /// Case-insensitive part of the name or the description.
    pub q: Option<String>,
    /// At most this many (1 to 1000, default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl ProjectParams {
    pub fn to_filter(&self) -> Result<ProjectFilter, ApiError> {
        Ok(ProjectFilter {
            owner: non_empty(&self.owner).map(str::to_owned),
            tag: non_empty(&self.tag).map(str::to_owned),
            q: non_empty(&self.q).map(str::to_owned),
            limit: parse_limit(non_empty(&self.limit))?,
            cursor: non_empty(&self.cursor).map(str::to_owned),
        })
    }
}

/// `?repo=&limit=&cursor=` of `/api/v1/deliveries`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryParams {
    /// `owner/name`: only the deliveries about that repository.
    pub repo: Option<String>,
    /// At most this many (1 to 1000, default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl DeliveryParams {
    pub fn limit(&self) -> Result<u32, ApiError> {
        parse_limit(non_empty(&self.limit))
    }

    pub fn cursor(&self) -> Option<&str> {
        non_empty(&self.cursor)
    }

    pub fn repo(&self) -> Option<&str> {
        non_empty(&self.repo)
    }
}

/// `?root=&depth=` of `/api/v1/graph`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GraphParams {
    /// The project at the centre; without it, the whole registry.
    #[param(pattern = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$", max_length = 63)]
    pub root: Option<String>,
    /// Steps each way from `root` (1 to 3, default 2).
    #[param(value_type = Option<u8>, minimum = 1, maximum = 3)]
    pub depth: Option<String>,
}

// The values of `Status`, for the OpenAPI document; a unit test keeps
// them equal.
/// A repository's status.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum RepoStatus {
    Pending,
    Synced,
    NoFile,
    Invalid,
    Conflict,
    Error,
    Removed,
}

/// Steps of a neighbourhood when the request gives none.
pub const DEFAULT_DEPTH: u8 = 2;

impl GraphParams {
    /// The root's name, checked against the name rule so that no other
    /// text reaches a query (a hostile name is refused, not looked up).
    pub fn root(&self) -> Result<Option<ProjectName>, ApiError> {
        non_empty(&self.root)
            .map(|root| {
                ProjectName::parse(root)
                    .map_err(|why| ApiError::BadRequest(format!("root: not a project name: {why}")))
            })
            .transpose()
    }

    /// `depth`: 1 to [`MAX_DEPTH`]; anything else is a 400.
    pub fn depth(&self) -> Result<u8, ApiError> {
        let Some(value) = non_empty(&self.depth) else {
            return Ok(DEFAULT_DEPTH);
        };
        match value.parse::<u8>() {
            Ok(depth @ 1..=MAX_DEPTH) => Ok(depth),
            _ => Err(ApiError::BadRequest(format!(
                "depth: expected 1, 2 or 3, got {:?}",
                clip(value)
            ))),
        }
    }
}

/// `?limit=&cursor=` of `/api/v1/systems` and `/systems`.
#[derive(Debug, Default, Clone, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SystemParams {
    /// At most this many systems (1 to 1000, default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl SystemParams {
    pub fn limit(&self) -> Result<u32, ApiError> {
        parse_limit(non_empty(&self.limit))
    }

    pub fn cursor(&self) -> Option<&str> {
        non_empty(&self.cursor)
    }
}

/// At most 64 characters of what a client sent, for an error message.
fn clip(value: &str) -> String {
    value.chars().take(64).collect()
}

/// An empty parameter (`?status=`, as an HTML form sends it) means "not given".
fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

fn parse_status(value: &str) -> Result<Status, ApiError> {
    value.parse().map_err(|_| {
        let expected: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        ApiError::BadRequest(format!(
            "status: unknown value {value:?} (expected one of {})",
            expected.join(", ")
        ))
    })
}

/// `limit` is 1 to [`MAX_LIMIT`]; outside is a 400, not a silent clamp, so a
/// script asking for 5000 learns it gets fewer.
pub(crate) fn parse_limit(value: Option<&str>) -> Result<u32, ApiError> {
    let Some(value) = value else {
        return Ok(DEFAULT_LIMIT);
    };
    match value.parse::<u32>() {
        Ok(limit @ 1..=MAX_LIMIT) => Ok(limit),
        _ => Err(ApiError::BadRequest(format!(
            "limit: expected a whole number from 1 to {MAX_LIMIT}, got {value:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(error: ApiError) -> String {
        error.to_string()
    }

    #[test]
    fn the_documented_statuses_should_be_the_statuses() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(RepoStatus::schema()).unwrap_or_default();
        let documented: Vec<&str> = schema["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str())
            .collect();
        let statuses: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(documented, statuses);
    }

    #[test]
    fn empty_parameters_should_mean_not_given() {
        let params = RepoParams {
            status: Some(String::new()),
            q: Some(String::new()),
            limit: Some(String::new()),
            cursor: Some(String::new()),
        };
        assert_eq!(params.to_filter().ok(), Some(RepoFilter::default()));
    }

    #[test]
    fn unknown_status_should_name_the_expected_values() {
        let params = RepoParams {
            status: Some("x".into()),
            ..RepoParams::default()
        };
        let error = params.to_filter().err().map(message);
        assert_eq!(
            error.as_deref(),
            Some(
                "status: unknown value \"x\" (expected one of pending, synced, no_file, \
                 invalid, conflict, error, removed)"
            )
        );
    }

    #[test]
    fn limit_should_accept_one_to_a_thousand_only() {
        assert_eq!(parse_limit(Some("1")).ok(), Some(1));
        assert_eq!(parse_limit(Some("1000")).ok(), Some(1000));
        assert_eq!(parse_limit(None).ok(), Some(DEFAULT_LIMIT));
        for bad in ["0", "1001", "-1", "ten", "1.5"] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn depth_should_be_one_to_three_and_root_a_project_name() {
        let params = |root: &str, depth: &str| GraphParams {
            root: Some(root.into()),
            depth: Some(depth.into()),
        };
        assert_eq!(params("a", "").depth().ok(), Some(DEFAULT_DEPTH));
        assert_eq!(params("a", "3").depth().ok(), Some(3));
        for bad in ["0", "4", "-1", "two", "300"] {
            let error = params("a", bad).depth().err().map(message);
            assert!(
                error.is_some_and(|e| e.starts_with("depth: expected 1, 2 or 3")),
                "{bad}"
            );
        }
        assert_eq!(
            params("cart-api", "1")
                .root()
                .ok()
                .flatten()
                .map(|n| n.as_str().to_owned()),
            Some("cart-api".to_owned())
        );
        assert!(params("", "1").root().is_ok_and(|r| r.is_none()));
        let long = "x".repeat(10_000);
        for hostile in ["a\0b", "../etc", "Cart", "a b", "\u{202e}x", long.as_str()] {
            let error = params(hostile, "1").root().err().map(message);
            assert!(
                error
                    .as_ref()
                    .is_some_and(|e| e.starts_with("root: not a project name")),
                "{hostile:?}"
            );
            assert!(
                error.is_some_and(|e| e.len() < 200),
                "the message stays short"
            );
        }
    }
}
