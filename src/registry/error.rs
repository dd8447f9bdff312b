//! Why a registry operation failed.

/// A registry failure: the database, or a request the caller got wrong.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("registry database: {0}")]
    Database(#[from] sqlx::Error),
    /// A read ran past its time in the database and was cancelled
    /// (docs/contract.md#bounds); `what` says which, in the plural.
    #[error("{what} ran past their time in the database")]
    TooLong { what: &'static str },
    /// A pagination cursor this server did not hand out (the API answers 400).
    #[error("malformed cursor")]
    BadCursor,
    /// A push's partial read no longer applies (the registry moved past
    /// its `before`, or what it touched clashes with files it did not
    /// touch): the repository is read again whole.
    #[error("the push's partial read no longer applies; reading the repository again")]
    ReadAgain,
    /// [`RegistryError::ReadAgain`], but the repository could not be queued.
    #[error("a push's partial read no longer applies, and it could not be read again: {0}")]
    NotReadAgain(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The claim ended before the commit; another worker may hold the id now.
    #[error(
        "lease on repository {0} lost before the commit; nothing written \
         (another worker may hold it now)"
    )]
    LeaseLost(crate::source::RepoId),
}
