//! A page of a list as every list answer shows it.

use serde::Serialize;

use crate::db::Page;

/// One page of a list, and where the next one starts (`None` on the last).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PageJson<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T> PageJson<T> {
    /// The page read, each item shown as `T`.
    pub fn of<R: Into<T>>(page: Page<R>) -> Self {
        Self {
            items: page.items.into_iter().map(Into::into).collect(),
            next_cursor: page.next_cursor,
        }
    }

    /// A list that is always one page.
    pub fn whole<R: Into<T>>(items: Vec<R>) -> Self {
        Self::of(Page {
            items,
            next_cursor: None,
        })
    }
}
