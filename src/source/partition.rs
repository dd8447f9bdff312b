//! Listing partitions: the unit a listing reports as complete or not, and
//! over which the sweep and the deletion guard count. The local folder is
//! one partition, each GitHub App installation another.
//!
//! The controller's listing and sweep carry it as this type; it is stored
//! (holds) as text — `local` or `installation/<id>` — and read back with
//! [`FromStr`], so the spelling lives here only.

use std::fmt;
use std::str::FromStr;

use crate::installation_id::InstallationId;

/// Where a repository is listed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Partition {
    /// The local `dir:` source (there is only one).
    Local,
    /// The repositories one GitHub App installation sees.
    Installation(InstallationId),
}

const LOCAL: &str = "local";
const INSTALLATION: &str = "installation/";

impl Partition {
    /// The partition of a repository seen by `installation` (`None`: the
    /// local folder), as the registry records it.
    pub fn of(installation: Option<InstallationId>) -> Self {
        installation.map_or(Partition::Local, Partition::Installation)
    }

    /// The installation, `None` for the local folder.
    pub fn installation(self) -> Option<InstallationId> {
        match self {
            Partition::Local => None,
            Partition::Installation(id) => Some(id),
        }
    }

    /// How the partition reads in a sentence.
    pub fn describe(self) -> String {
        match self {
            Partition::Local => "the local folder".to_owned(),
            Partition::Installation(id) => format!("installation {id}"),
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Local => f.write_str(LOCAL),
            Partition::Installation(id) => write!(f, "{INSTALLATION}{id}"),
        }
    }
}

/// A partition name this program does not make.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown listing partition {0:?}")]
pub struct UnknownPartition(pub String);

impl FromStr for Partition {
    type Err = UnknownPartition;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name == LOCAL {
            return Ok(Partition::Local);
        }
        let unknown = || UnknownPartition(name.to_owned());
        let id = name.strip_prefix(INSTALLATION).ok_or_else(unknown)?;
        // Only the canonical spelling, so that names round-trip.
        let parsed = id.parse::<i64>().map_err(|_| unknown())?;
        if parsed.to_string() != id {
            return Err(unknown());
        }
        Ok(Partition::Installation(InstallationId(parsed)))
    }
}

impl sqlx::Type<sqlx::Postgres> for Partition {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        <String as sqlx::Type<sqlx::Postgres>>::type_info()
    }

    fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
        <String as sqlx::Type<sqlx::Postgres>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Postgres> for Partition {
    fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let text = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
        Ok(text.parse()?)
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for Partition {
    fn encode_by_ref(
        &self,
        buf: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <String as sqlx::Encode<sqlx::Postgres>>::encode(self.to_string(), buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_names_should_round_trip() {
        let installations = [None, Some(0), Some(42), Some(i64::MAX)];
        for installation in installations.map(|i| i.map(InstallationId)) {
            let partition = Partition::of(installation);
            assert_eq!(partition.to_string().parse(), Ok(partition));
            assert_eq!(partition.installation(), installation);
        }
        assert_eq!(
            Partition::Installation(InstallationId(7)).to_string(),
            "installation/7"
        );
        assert_eq!(Partition::Local.to_string(), "local");
    }

    #[test]
    fn parse_should_reject_other_names() {
        for name in [
            "",
            "Local",
            "installation/",
            "installation/x",
            "installation/007",
            "org/1",
        ] {
            assert!(name.parse::<Partition>().is_err(), "{name}");
        }
    }

    #[test]
    fn describe_should_name_installations_and_the_local_folder() {
        assert_eq!(
            Partition::Installation(InstallationId(42)).describe(),
            "installation 42"
        );
        assert_eq!(Partition::Local.describe(), "the local folder");
    }
}
