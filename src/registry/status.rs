//! The one status each tracked repository has (docs/contract.md#repository-statuses).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A repository's status; stored as its [`Status::as_str`] text, and read
/// back from a row straight into this type.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Known, not handled yet.
    Pending,
    /// File read and applied.
    Synced,
    /// The repository has no project file; its entries are gone.
    NoFile,
    /// The file breaks a rule; entries kept as they were.
    Invalid,
    /// A name is owned by another repository; the others applied.
    Conflict,
    /// GitHub or the database failed; entries kept, retried.
    Error,
    /// Deleted, archived or no longer visible; entries gone.
    Removed,
}

impl Status {
    /// Every status, in the order the dashboard shows them.
    pub const ALL: [Status; 7] = [
        Status::Pending,
        Status::Synced,
        Status::NoFile,
        Status::Invalid,
        Status::Conflict,
        Status::Error,
        Status::Removed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Synced => "synced",
            Status::NoFile => "no_file",
            Status::Invalid => "invalid",
            Status::Conflict => "conflict",
            Status::Error => "error",
            Status::Removed => "removed",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Stored as its name, in a text column.
impl sqlx::Type<sqlx::Postgres> for Status {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <&str as sqlx::Type<sqlx::Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
    }
}

impl sqlx::postgres::PgHasArrayType for Status {
    fn array_type_info() -> sqlx::postgres::PgTypeInfo {
        <&str as sqlx::postgres::PgHasArrayType>::array_type_info()
    }

    fn array_compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <&str as sqlx::postgres::PgHasArrayType>::array_compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Postgres> for Status {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let text = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
        Ok(text.parse()?)
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for Status {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
    }
}

/// Compares with a status name, as stored and shown.
impl PartialEq<&str> for Status {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A status name that is not one of the seven.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown status {0:?} (expected pending, synced, no_file, invalid, conflict, error or removed)"
)]
pub struct UnknownStatus(pub String);

impl FromStr for Status {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_should_parse_back_from_its_name() {
        for status in Status::ALL {
            assert_eq!(status.as_str().parse::<Status>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(serde_json::Value::from(status.as_str()))
            );
        }
        assert!("Synced".parse::<Status>().is_err());
    }
}
