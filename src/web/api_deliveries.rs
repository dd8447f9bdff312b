//! `GET /api/v1/deliveries`: recent webhook deliveries, newest first (docs/contract.md#http-routes).

use axum::extract::State;
use axum::Json;

use super::delivery_log;
use super::error::{ApiError, ErrorJson};
use super::extract::ApiQuery;
use super::json::{DeliveryJson, PageJson};
use super::params::DeliveryParams;
use super::state::AppState;

/// Deliveries, optionally only those about one repository (`repo=owner/name`).
#[utoipa::path(get, path = "/api/v1/deliveries", operation_id = "list_deliveries",
    tag = "webhooks", params(DeliveryParams),
    responses((status = 200, description = "A page of deliveries, newest first", body = PageJson<DeliveryJson>),
              (status = 400, description = "A bad parameter", body = ErrorJson)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<DeliveryParams>,
) -> Result<Json<PageJson<DeliveryJson>>, ApiError> {
    let limit = params.limit()?;
    let page = delivery_log::page(&state.pool, limit, params.cursor(), params.repo()).await?;
    Ok(Json(PageJson::of(page)))
}
