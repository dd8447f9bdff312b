//! Sessions ended by signing out, in PostgreSQL so that every replica
//! refuses their cookies (docs/contract.md#bounds). A row lives until the cookie would have
//! expired anyway; each sign-out prunes the rows past that.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// Records session `id` as ended until `expires_at`, and forgets sessions
/// that have expired since (one round trip).
pub async fn revoke(pool: &PgPool, id: &str, expires_at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query(
        "with pruned as (delete from revoked_sessions where expires_at <= now())
         insert into revoked_sessions (id, expires_at) values ($1, $2)
         on conflict (id) do nothing",
    )
    .bind(id)
    .bind(expires_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// Whether session `id` was signed out.
pub async fn is_revoked(pool: &PgPool, id: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar("select exists (select 1 from revoked_sessions where id = $1)")
        .bind(id)
        .fetch_one(pool)
        .await
}
