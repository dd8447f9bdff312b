//! The JSON shapes of the HTTP answers (docs/contract.md#http-routes), one
//! file per family, each made from what the registry or the delivery log
//! read. Only `web` defines what an answer looks like; the reads return
//! plain rows.

mod change;
mod delivery;
mod entry;
mod page;
mod relations;
mod repo;

pub use change::{change_body, shown_changes, ChangeJson, FeedJson};
pub use delivery::DeliveryJson;
pub use entry::EntryJson;
pub use page::PageJson;
pub use relations::{
    DependencyJson, DependencyStatus, DependentJson, EdgeJson, GraphJson, GraphNodeJson,
    ProjectJson, SystemJson, SystemOwnerJson,
};
pub use repo::{ActiveHoldJson, CheckJson, EventJson, HoldJson, RepoDetailJson, RepoJson};
