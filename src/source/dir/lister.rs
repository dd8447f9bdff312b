//! Lists the local folders as repositories.

use crate::controller::{Enqueue, Failure, Lister, Partition, Trigger};
use crate::source::{self, RepoId};

use super::{repo_id, DirSource};

/// The folder list is the listing; it is always complete when readable.
#[derive(Debug, Clone)]
pub struct DirLister {
    pub source: DirSource,
}

impl Lister for DirLister {
    type Key = RepoId;

    async fn list(&self) -> Result<Vec<Partition<RepoId>>, Failure> {
        let folders = self.source.folders().map_err(|e| {
            Failure::new(format!("cannot list {}: {e}", self.source.root.display()))
        })?;
        let items = folders
            .iter()
            .map(|f| Enqueue::because(repo_id(f), Trigger::Listing))
            .collect();
        Ok(vec![Partition {
            name: source::Partition::Local.to_string(),
            items,
            outcome: Ok(()),
        }])
    }
}
