//! Why a registry operation failed.

/// A registry failure: the database, or a request the caller got wrong.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("registry database: {0}")]
    Database(#[from] sqlx::Error),
    /// A pagination cursor this server did not hand out (the API answers 400).
    #[error("malformed cursor")]
    BadCursor,
}
