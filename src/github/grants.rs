//! What each installation granted the App: its permissions and the events
//! it delivers, as GitHub's list of installations says (read with every
//! listing, so an owner accepting new permissions shows at the next one).
//! Kept so that the dashboard can name what Roster asks for in `app.yml`
//! and an installation lacks: a registration made before `app.yml` asked
//! for more does not change by itself.

use std::collections::BTreeMap;

use sqlx::PgPool;

use super::auth::Installation;
use crate::source::InstallationId;

/// One installation's grant, as last listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub installation_id: InstallationId,
    pub account: String,
    pub organization: bool,
    pub app_slug: Option<String>,
    /// Permission → `read`, `write` or `admin`.
    pub permissions: BTreeMap<String, String>,
    pub events: Vec<String>,
}

/// Stores the grants of `installations` (those GitHub gave one for) and
/// forgets installations no longer listed.
pub async fn record(pool: &PgPool, installations: &[Installation]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for installation in installations {
        let Some(granted) = &installation.granted else {
            continue;
        };
        let permissions = serde_json::to_value(&granted.permissions)
            .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
        sqlx::query(
            "insert into installation_grants
                 (installation_id, account, organization, app_slug, permissions, events)
             values ($1, $2, $3, $4, $5, $6)
             on conflict (installation_id) do update set account = excluded.account,
                 organization = excluded.organization, app_slug = excluded.app_slug,
                 permissions = excluded.permissions, events = excluded.events,
                 listed_at = now()",
        )
        .bind(installation.id)
        .bind(&installation.account)
        .bind(installation.organization)
        .bind(&granted.app_slug)
        .bind(permissions)
        .bind(&granted.events)
        .execute(&mut *tx)
        .await?;
    }
    let listed: Vec<InstallationId> = installations.iter().map(|i| i.id).collect();
    sqlx::query("delete from installation_grants where installation_id <> all($1)")
        .bind(&listed)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// Every installation's grant, by id.
pub async fn all(pool: &PgPool) -> Result<Vec<Grant>, sqlx::Error> {
    type Row = (
        InstallationId,
        String,
        bool,
        Option<String>,
        serde_json::Value,
        Vec<String>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "select installation_id, account, organization, app_slug, permissions, events
         from installation_grants order by installation_id",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(installation_id, account, organization, app_slug, permissions, events)| Grant {
                installation_id,
                account,
                organization,
                app_slug,
                permissions: serde_json::from_value(permissions).unwrap_or_default(),
                events,
            },
        )
        .collect())
}
