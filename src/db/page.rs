//! One page of a list read in key order, and where the next one starts:
//! what the registry's and the delivery log's list reads return, before
//! `web` shows it (as `{"items": …, "next_cursor": …}`).

/// Items of one page, and the cursor after the last (`None` on the last page).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}
