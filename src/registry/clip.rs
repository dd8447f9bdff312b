//! Bounds on the text the registry stores (docs/contract.md#bounds): a repository's `error`
//! and each event's message. Whatever a project file or a failing service
//! says, a row stays small, and so do the answers that show it.

use std::borrow::Cow;

/// Largest `error` stored with a repository: the first hundred problems of
/// a file fit, with room to spare.
pub const MAX_ERROR_BYTES: usize = 16 * 1024;

/// Largest event message: the start of the error it repeats is enough for
/// a timeline, and fifty of them keep the detail route small.
pub const MAX_EVENT_BYTES: usize = 4 * 1024;

/// Marks text that was cut.
const MARK: &str = "…";

/// Cuts `text` to at most `max` bytes. It ends at the last whole line that
/// fits, followed by a line `…`; when even the first line does not fit, it
/// is cut inside that line (at a character boundary) and ends with `…`.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    // What fits before "\n…"; a line break right after it ends a whole line.
    let budget = max.saturating_sub(MARK.len() + 1);
    let head = &text[..floor_char_boundary(text, budget + 1)];
    if let Some(end) = head.rfind('\n') {
        return Cow::Owned(format!("{}\n{MARK}", &text[..end]));
    }
    let end = floor_char_boundary(text, max.saturating_sub(MARK.len()));
    Cow::Owned(format!("{}{MARK}", &text[..end]))
}

/// The largest index `<= index` that starts a character of `text`.
fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_should_leave_text_within_the_bound_alone() {
        assert!(matches!(clip("a\nb", 3), Cow::Borrowed("a\nb")));
        assert_eq!(clip("", 0), "");
    }

    #[test]
    fn clip_should_cut_at_the_last_whole_line_and_mark_it() {
        let text = "line one\nline two\nline three\n";
        // "line one\nline two" (17) + "\n…" (4) = 21 bytes.
        assert_eq!(clip(text, 21), "line one\nline two\n…");
        assert_eq!(clip(text, 20), "line one\n…");
        assert_eq!(clip(text, text.len() - 1), "line one\nline two\n…");
    }

    #[test]
    fn clip_should_cut_inside_a_first_line_longer_than_the_bound() {
        assert_eq!(clip("abcdefgh\nij", 6), "abc…");
        // Never inside a character: "é" is two bytes.
        assert_eq!(clip("ééééé", 6), "é…");
    }

    #[test]
    fn clip_should_keep_sixteen_kib_of_problems_at_a_line_boundary() {
        let line = format!("project.yaml:1:1: name: {}", "x".repeat(75));
        let text = vec![line.as_str(); 500].join("\n");
        let cut = clip(&text, MAX_ERROR_BYTES);
        assert!(cut.len() <= MAX_ERROR_BYTES, "{}", cut.len());
        assert!(
            cut.len() > MAX_ERROR_BYTES - line.len() - 8,
            "{}",
            cut.len()
        );
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(lines.last(), Some(&"…"));
        assert!(lines[..lines.len() - 1].iter().all(|l| *l == line));
    }
}
