//! What a valid project file holds, in the JSON shape the API shows (docs/contract.md#the-project-file).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ProjectName;

/// Every project a file declares; the one-project shape gives a list of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectFile {
    pub projects: Vec<Project>,
}

/// One registry entry as declared in a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub name: ProjectName,
    pub owner: String,
    pub description: Option<String>,
    pub lifecycle: Option<Lifecycle>,
    pub tags: Vec<String>,
    pub links: Vec<Link>,
    pub labels: BTreeMap<String, String>,
}

/// A titled link (runbook, dashboard, docs); `url` is http or https.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub title: String,
    pub url: String,
}

/// Where a project stands in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    Experimental,
    Production,
    Deprecated,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 3] = [
        Lifecycle::Experimental,
        Lifecycle::Production,
        Lifecycle::Deprecated,
    ];

    /// The spelling used in files, JSON and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Experimental => "experimental",
            Lifecycle::Production => "production",
            Lifecycle::Deprecated => "deprecated",
        }
    }
}

impl fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the three lifecycle values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be one of experimental, production, deprecated, found \"{0}\"")]
pub struct LifecycleError(pub String);

impl FromStr for Lifecycle {
    type Err = LifecycleError;

    fn from_str(value: &str) -> Result<Lifecycle, LifecycleError> {
        Lifecycle::ALL
            .into_iter()
            .find(|lifecycle| lifecycle.as_str() == value)
            .ok_or_else(|| LifecycleError(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_should_read_back_what_it_writes() {
        for lifecycle in Lifecycle::ALL {
            assert_eq!(lifecycle.as_str().parse::<Lifecycle>().unwrap(), lifecycle);
            assert_eq!(
                serde_json::to_string(&lifecycle).unwrap(),
                format!("\"{lifecycle}\"")
            );
        }
        assert_eq!(
            "Production".parse::<Lifecycle>().unwrap_err().to_string(),
            "must be one of experimental, production, deprecated, found \"Production\""
        );
    }
}
