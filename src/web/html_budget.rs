//! The byte bound of the pages that list things: rows are counted as the
//! escaped HTML they become, so that a page stays under 1 MiB however many
//! quotes or angle brackets its values hold (each grows up to five times
//! when escaped).

use crate::registry::budget::ITEMS_BUDGET;

/// Bytes of a row's markup around its values (tags, classes, labels).
pub const ROW_MARKUP: usize = 1024;

/// The length of `text` once HTML-escaped.
pub fn escaped_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'<' | b'>' => 4,
            b'&' | b'"' | b'\'' => 5,
            _ => 1,
        })
        .sum()
}

/// Keeps the rows that fit in `budget` bytes of a page (at least one),
/// each measured by `size`; returns whether rows were dropped. A page's
/// lists together take at most [`ITEMS_BUDGET`].
pub fn keep_rows<T>(rows: &mut Vec<T>, budget: usize, size: impl Fn(&T) -> usize) -> bool {
    debug_assert!(budget <= ITEMS_BUDGET);
    crate::registry::budget::keep_within(rows, budget, |row| ROW_MARKUP + size(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_len_should_count_what_escaping_adds() {
        assert_eq!(escaped_len("a<b>&\"'é"), 1 + 4 + 1 + 4 + 5 + 5 + 5 + 2);
    }
}
