//! The webhook delivery log as the API and the dashboard read it: the one
//! place `web` reaches the log, and the JSON shape of a delivery
//! (docs/contract.md#a-delivery).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgPool;

use super::error::ApiError;
use crate::github::webhook::deliveries::{list_deliveries, DeliveriesError, DeliveryRecord};
use crate::registry::Page;

/// One delivery as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryJson {
    /// GitHub's `X-GitHub-Delivery`.
    pub id: String,
    pub event: String,
    pub action: Option<String>,
    /// `owner/name`, when the payload names a repository.
    pub repo: Option<String>,
    pub outcome: String,
    pub at: DateTime<Utc>,
    pub redelivery_requested: bool,
}

impl From<DeliveryRecord> for DeliveryJson {
    fn from(record: DeliveryRecord) -> Self {
        Self {
            id: record.id,
            event: record.event,
            action: record.action,
            repo: record.repo,
            outcome: record.outcome,
            at: record.at,
            redelivery_requested: record.redelivery_requested,
        }
    }
}

/// Deliveries newest first, `limit` per page, after `cursor`, only those
/// of `repo` (`owner/name`) when given.
pub async fn page(
    pool: &PgPool,
    limit: u32,
    cursor: Option<&str>,
    repo: Option<&str>,
) -> Result<Page<DeliveryJson>, ApiError> {
    let page = list_deliveries(pool, limit, cursor, repo)
        .await
        .map_err(api_error)?;
    Ok(Page {
        items: page.items.into_iter().map(DeliveryJson::from).collect(),
        next_cursor: page.next_cursor,
    })
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
