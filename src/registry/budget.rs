//! The byte bound of every answer that lists things: at most
//! [`MAX_ANSWER_BYTES`], so that no list, however large its items, makes
//! the server build (or a client read) a huge answer. A page holds fewer
//! items than asked when they are large; its cursor goes on from there.

use std::io;

use serde::Serialize;

/// Most bytes one answer that lists things takes (1 MiB).
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Bytes kept for what surrounds the items (`{"items": [...],
/// "next_cursor": …}`, a page's chrome).
pub const ENVELOPE_BYTES: usize = 16 * 1024;

/// Bytes the items of one answer may take.
pub const ITEMS_BUDGET: usize = MAX_ANSWER_BYTES - ENVELOPE_BYTES;

/// Counts what is written, keeping nothing.
struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The length of `value` as compact JSON, without building it.
pub fn json_len<T: Serialize>(value: &T) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a value serde refuses counts as
    // nothing here and fails where it is really encoded.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Keeps the longest prefix of `items` whose sizes (by `size`, plus one
/// separator each) fit in `budget`, and at least one item. Returns whether
/// items were dropped.
pub fn keep_within<T>(items: &mut Vec<T>, budget: usize, size: impl Fn(&T) -> usize) -> bool {
    let mut used = 0;
    let mut keep = 0;
    for item in items.iter() {
        used += size(item) + 1;
        if used > budget && keep > 0 {
            break;
        }
        keep += 1;
    }
    let cut = keep < items.len();
    items.truncate(keep);
    cut
}

/// [`keep_within`] of [`ITEMS_BUDGET`], measured as JSON.
pub fn fit_json<T: Serialize>(items: &mut Vec<T>) -> bool {
    keep_within(items, ITEMS_BUDGET, json_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_len_should_be_the_length_of_the_encoding() {
        let value = serde_json::json!({"a": [1, 2, "é"], "b": null});
        assert_eq!(json_len(&value), value.to_string().len());
    }

    #[test]
    fn keep_within_should_keep_a_prefix_that_fits_and_never_nothing() {
        let mut items = vec![4, 4, 4, 4];
        assert!(keep_within(&mut items, 12, |n| *n));
        assert_eq!(items, vec![4, 4]);
        let mut huge = vec![100, 1];
        assert!(keep_within(&mut huge, 10, |n| *n));
        assert_eq!(huge, vec![100]);
        let mut small = vec![1, 1];
        assert!(!keep_within(&mut small, 10, |n| *n));
        assert_eq!(small.len(), 2);
    }
}
