//! The webhook delivery log as the API (`GET /api/v1/deliveries`, newest
//! first, docs/contract.md#http-routes) and the dashboard read it: the one
//! place `web` reaches the log (a delivery's JSON shape is
//! `json::DeliveryJson`, docs/contract.md#a-delivery).

use axum::extract::State;
use axum::Json;
use sqlx::PgPool;

use super::error::{ApiError, BadParameter};
use super::extract::ApiQuery;
use super::json::{DeliveryJson, PageJson};
use super::params::DeliveryParams;
use super::state::AppState;
use crate::db::Page;
use crate::intake::deliveries::{list_deliveries, DeliveriesError};

pub use crate::intake::deliveries::DeliveryRecord;

/// Deliveries newest first, `limit` per page, after `cursor`, only those
/// of `repo` (`owner/name`) when given.
pub async fn page(
    pool: &PgPool,
    limit: u32,
    cursor: Option<&str>,
    repo: Option<&str>,
) -> Result<Page<DeliveryRecord>, ApiError> {
    list_deliveries(pool, limit, cursor, repo)
        .await
        .map_err(api_error)
}

/// The API's answer to a failed read of the log.
fn api_error(error: DeliveriesError) -> ApiError {
    match error {
        DeliveriesError::InvalidCursor => {
            ApiError::BadRequest("cursor: not a cursor this list handed out".to_owned())
        }
        DeliveriesError::Database(detail) => {
            ApiError::unavailable("delivery log query failed", &detail)
        }
    }
}

/// Deliveries, optionally only those about one repository (`repo=owner/name`).
#[utoipa::path(get, path = "/api/v1/deliveries", operation_id = "list_deliveries",
    tag = "webhooks", params(DeliveryParams),
    responses((status = 200, description = "A page of deliveries, newest first", body = PageJson<DeliveryJson>),
              BadParameter))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<DeliveryParams>,
) -> Result<Json<PageJson<DeliveryJson>>, ApiError> {
    let limit = params.limit()?;
    let page = page(&state.pool, limit, params.cursor(), params.repo()).await?;
    Ok(Json(PageJson::of(page)))
}
