//! What a valid project file holds, in the JSON shape the API shows (docs/contract.md#the-project-file).

use serde::{Deserialize, Serialize};

use super::fields::Fields;
use super::ProjectName;

/// Every project a file declares; the one-project shape gives a list of one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectFile {
    pub projects: Vec<Project>,
}

impl ProjectFile {
    /// The owner text of each project, in file order: what the directory
    /// resolves before the file's owners can be checked.
    pub fn owner_texts(&self) -> Vec<&str> {
        self.projects
            .iter()
            .map(|p| p.fields.owner.as_str())
            .collect()
    }
}

/// One registry entry as declared in a repository: its name and the
/// fields of the table in `fields.rs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub name: ProjectName,
    #[serde(flatten)]
    pub fields: Fields,
}
