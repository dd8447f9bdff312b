//! The pages' escaper: HTML escaping, and the bidirectional controls and
//! zero-width characters of [`crate::project::invisible`] written as
//! `\u{202E}`, so that text from a project file cannot make a page read
//! other than it is. `src/askama.toml` makes it the escaper of every `.html`
//! template.

use std::borrow::Cow;
use std::fmt;

use askama::filters::{Escaper, Html};

use crate::project::invisible::escape_invisible;

/// See the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct VisibleHtml;

impl Escaper for VisibleHtml {
    fn write_escaped_str<W: fmt::Write>(&self, dest: W, string: &str) -> fmt::Result {
        match escape_invisible(string) {
            Cow::Borrowed(text) => Html.write_escaped_str(dest, text),
            Cow::Owned(text) => Html.write_escaped_str(dest, &text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_overrides_should_both_be_escaped() {
        let mut out = String::new();
        VisibleHtml
            .write_escaped_str(&mut out, "<b>\u{202E}gnp.exe\u{200B}</b>")
            .expect("write");
        assert_eq!(out, "&#60;b&#62;\\u{202E}gnp.exe\\u{200B}&#60;/b&#62;");
    }

    #[test]
    fn control_characters_should_be_escaped_but_line_ends_and_tabs_kept() {
        let mut out = String::new();
        VisibleHtml
            .write_escaped_str(&mut out, "ring\u{7}\u{1b}[31m\u{9f}\tok\r\n")
            .expect("write");
        assert_eq!(out, "ring\\u{0007}\\u{001B}[31m\\u{009F}\tok\r\n");
    }
}
