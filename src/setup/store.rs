//! What setup keeps in PostgreSQL, so any replica can serve any step: the
//! setup tokens (hashed), the issued states, and the App itself with its
//! secrets sealed under `ROSTER_SECRET_KEY`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use super::key::{random_hex, SecretKey};
use super::seal::{self, OpenError, Sealed};

/// How long a `state` may be used after it was issued.
pub const STATE_LIFETIME_SECS: i64 = 3600;

/// An App GitHub registered from the manifest.
#[derive(Clone, Serialize, Deserialize)]
pub struct StoredApp {
    pub app_id: u64,
    pub slug: String,
    pub html_url: String,
    pub pem: String,
    pub webhook_secret: String,
    pub client_id: String,
    pub client_secret: String,
}

impl std::fmt::Debug for StoredApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredApp")
            .field("app_id", &self.app_id)
            .field("slug", &self.slug)
            .field("html_url", &self.html_url)
            .finish_non_exhaustive()
    }
}

/// What the secrets' sealed JSON holds.
#[derive(Serialize, Deserialize)]
struct Secrets {
    pem: String,
    webhook_secret: String,
    client_id: String,
    client_secret: String,
}

/// Why the stored App could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("the stored GitHub App is damaged: {0}")]
    Damaged(String),
}

/// What became of a `state` presented at the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateUse {
    /// Valid, and now used: what it was issued for.
    Taken {
        org: String,
        public_url: String,
    },
    Used,
    Expired,
    /// Signed with this key but not in the database (never issued here).
    Unknown,
}

/// Whether an App is stored (without opening it).
pub async fn app_exists(pool: &PgPool) -> Result<bool, sqlx::Error> {
    let row: Option<(i64,)> = sqlx::query_as("select app_id from setup_app")
        .fetch_optional(pool)
        .await?;
    Ok(row.is_some())
}

/// The stored App, opened with `key`; `None` when none is stored.
pub async fn load_app(pool: &PgPool, key: &SecretKey) -> Result<Option<StoredApp>, StoreError> {
    let row: Option<(i64, String, String, Vec<u8>)> =
        sqlx::query_as("select app_id, slug, html_url, sealed from setup_app")
            .fetch_optional(pool)
            .await?;
    let Some((app_id, slug, html_url, sealed)) = row else {
        return Ok(None);
    };
    let plain = seal::open(key, &sealed)?;
    let secrets: Secrets =
        serde_json::from_slice(&plain).map_err(|e| StoreError::Damaged(e.to_string()))?;
    let app_id = u64::try_from(app_id).map_err(|e| StoreError::Damaged(e.to_string()))?;
    Ok(Some(StoredApp {
        app_id,
        slug,
        html_url,
        pem: secrets.pem,
        webhook_secret: secrets.webhook_secret,
        client_id: secrets.client_id,
        client_secret: secrets.client_secret,
    }))
}

/// Stores `app` unless one is stored already (then `false`), and ends
/// every setup token: setup is over.
pub async fn save_app(pool: &PgPool, key: &SecretKey, app: &StoredApp) -> Result<bool, StoreError> {
    let secrets = Secrets {
        pem: app.pem.clone(),
        webhook_secret: app.webhook_secret.clone(),
        client_id: app.client_id.clone(),
        client_secret: app.client_secret.clone(),
    };
    let plain = serde_json::to_vec(&secrets).map_err(|e| StoreError::Damaged(e.to_string()))?;
    let sealed = seal::seal(key, &plain);
    let app_id = i64::try_from(app.app_id).map_err(|e| StoreError::Damaged(e.to_string()))?;
    let mut tx = pool.begin().await?;
    let inserted = sqlx::query(
        "insert into setup_app (app_id, slug, html_url, sealed) values ($1, $2, $3, $4) \
         on conflict (one) do nothing",
    )
    .bind(app_id)
    .bind(&app.slug)
    .bind(&app.html_url)
    .bind(&sealed)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    sqlx::query("delete from setup_tokens")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(inserted)
}

fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The setup token replicas print: the one in the database while it is
/// unused, else a new one. Every replica prints the same address, so a
/// second replica's start leaves the first one's link working; a token
/// sealed under another key (`ROSTER_SECRET_KEY` changed) is replaced.
/// Replicas starting together agree: one insert wins, the others read it.
pub async fn logged_token(pool: &PgPool, key: &SecretKey) -> Result<String, sqlx::Error> {
    loop {
        let row: Option<(Vec<u8>, Vec<u8>)> =
            sqlx::query_as("select token_hash, sealed from setup_tokens where sealed is not null")
                .fetch_optional(pool)
                .await?;
        if let Some((hash, sealed)) = row {
            let opened = seal::open_as(Sealed::LoggedToken, key, &sealed)
                .ok()
                .and_then(|plain| String::from_utf8(plain).ok())
                .filter(|token| token_hash(token) == hash);
            if let Some(token) = opened {
                return Ok(token);
            }
            sqlx::query("delete from setup_tokens where token_hash = $1")
                .bind(&hash)
                .execute(pool)
                .await?;
            continue;
        }
        let token = random_hex(32);
        let sealed = seal::seal_as(Sealed::LoggedToken, key, token.as_bytes());
        let inserted = sqlx::query(
            "insert into setup_tokens (token_hash, sealed) values ($1, $2) on conflict do nothing",
        )
        .bind(token_hash(&token))
        .bind(&sealed)
        .execute(pool)
        .await?
        .rows_affected()
            == 1;
        if inserted {
            return Ok(token);
        }
    }
}

/// Uses `token` up: it opens setup no more, and `next`, handed to the
/// browser that used it (and to no log), opens it in its place. One
/// statement decides: of two uses of one token, only one gets `true`.
pub async fn use_token(pool: &PgPool, token: &str, next: &str) -> Result<bool, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let used = sqlx::query("delete from setup_tokens where token_hash = $1")
        .bind(token_hash(token))
        .execute(&mut *tx)
        .await?
        .rows_affected()
        == 1;
    if !used {
        tx.rollback().await?;
        return Ok(false);
    }
    sqlx::query("insert into setup_tokens (token_hash) values ($1)")
        .bind(token_hash(next))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

/// Whether `token` is a setup token still valid.
pub async fn token_valid(pool: &PgPool, token: &str) -> Result<bool, sqlx::Error> {
    let row: Option<(i32,)> = sqlx::query_as("select 1 from setup_tokens where token_hash = $1")
        .bind(token_hash(token))
        .fetch_optional(pool)
        .await?;
    Ok(row.is_some())
}

/// Records an issued state and what it is for.
pub async fn add_state(
    pool: &PgPool,
    nonce: &str,
    org: &str,
    public_url: &str,
) -> Result<(), sqlx::Error> {
    // States long past their hour are of no use, even to say "expired".
    sqlx::query("delete from setup_states where created_at < now() - interval '1 day'")
        .execute(pool)
        .await?;
    sqlx::query("insert into setup_states (nonce, org, public_url) values ($1, $2, $3)")
        .bind(nonce)
        .bind(org)
        .bind(public_url)
        .execute(pool)
        .await?;
    Ok(())
}

/// Uses the state `nonce` once, if it is young enough and unused.
pub async fn take_state(pool: &PgPool, nonce: &str) -> Result<StateUse, sqlx::Error> {
    let taken: Option<(String, String)> = sqlx::query_as(
        "update setup_states set used_at = now() \
         where nonce = $1 and used_at is null \
           and created_at > now() - make_interval(secs => $2) \
         returning org, public_url",
    )
    .bind(nonce)
    .bind(STATE_LIFETIME_SECS as f64)
    .fetch_optional(pool)
    .await?;
    if let Some((org, public_url)) = taken {
        return Ok(StateUse::Taken { org, public_url });
    }
    let row: Option<(bool,)> =
        sqlx::query_as("select used_at is not null from setup_states where nonce = $1")
            .bind(nonce)
            .fetch_optional(pool)
            .await?;
    Ok(match row {
        None => StateUse::Unknown,
        Some((true,)) => StateUse::Used,
        Some((false,)) => StateUse::Expired,
    })
}

/// Makes a taken state usable again: the exchange failed for a reason
/// that may pass (GitHub unreachable), and reloading the page retries.
pub async fn release_state(pool: &PgPool, nonce: &str) -> Result<(), sqlx::Error> {
    sqlx::query("update setup_states set used_at = null where nonce = $1")
        .bind(nonce)
        .execute(pool)
        .await?;
    Ok(())
}

/// What only time or a look inside gives, for tests: an older state, the
/// sealed bytes, the states issued.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use sqlx::PgPool;

    /// Moves the state `nonce` `minutes` into the past.
    pub async fn age_state(pool: &PgPool, nonce: &str, minutes: i32) -> Result<(), sqlx::Error> {
        sqlx::query(
            "update setup_states set created_at = created_at - make_interval(mins => $2) \
             where nonce = $1",
        )
        .bind(nonce)
        .bind(minutes)
        .execute(pool)
        .await?;
        Ok(())
    }

    /// How many states were issued.
    pub async fn state_count(pool: &PgPool) -> Result<i64, sqlx::Error> {
        let (n,): (i64,) = sqlx::query_as("select count(*) from setup_states")
            .fetch_one(pool)
            .await?;
        Ok(n)
    }

    /// The stored App's sealed bytes, as PostgreSQL holds them.
    pub async fn sealed(pool: &PgPool) -> Result<Option<Vec<u8>>, sqlx::Error> {
        let row: Option<(Vec<u8>,)> = sqlx::query_as("select sealed from setup_app")
            .fetch_optional(pool)
            .await?;
        Ok(row.map(|(bytes,)| bytes))
    }
}
