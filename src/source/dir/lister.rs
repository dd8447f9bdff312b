//! Lists the local folders as repositories.

use crate::controller::{Enqueue, Failure, Listed, Lister, Trigger};
use crate::source::{self, RepoId};

use super::{repo_id, DirError, DirSource};

/// The folder list is the listing; it is always complete when readable.
#[derive(Debug, Clone)]
pub struct DirLister {
    pub source: DirSource,
}

impl Lister for DirLister {
    type Key = RepoId;
    type Partition = source::Partition;

    async fn list(&self) -> Result<Vec<Listed<RepoId, source::Partition>>, Failure> {
        let folders = self.source.folders().map_err(|source| {
            Failure::new(DirError::List {
                path: self.source.root.clone(),
                source,
            })
        })?;
        let items = folders
            .iter()
            .map(|f| Enqueue::because(repo_id(f), Trigger::Listing))
            .collect();
        Ok(vec![Listed {
            partition: source::Partition::Local,
            items,
            outcome: Ok(()),
        }])
    }
}
