//! The webhook delivery log as the API and the dashboard read it: the one
//! place `web` reaches the log (a delivery's JSON shape is
//! `json::DeliveryJson`, docs/contract.md#a-delivery).

use sqlx::PgPool;

use super::error::ApiError;
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
