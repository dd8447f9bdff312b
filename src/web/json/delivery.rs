//! A webhook delivery as the API shows it (docs/contract.md#a-delivery).

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::web::delivery_log::DeliveryRecord;

/// One delivery as the API shows it: what [`DeliveryRecord`] holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct DeliveryJson {
    pub id: String,
    pub event: String,
    pub action: Option<String>,
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
