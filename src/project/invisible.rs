//! Characters that change how text around them is shown without being seen
//! themselves: the bidirectional overrides, embeddings, isolates and marks,
//! and the zero-width characters. A project file's text quoted in a check
//! run or on a page could use them to make a line read other than it is
//! (a name that looks like another, a warning turned around), so they are
//! shown escaped, as `\u{202E}`.

use std::borrow::Cow;

/// Whether `c` is a bidirectional control or a zero-width character.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'               // Arabic letter mark
            | '\u{180E}'         // Mongolian vowel separator
            | '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner; LRM, RLM
            | '\u{202A}'..='\u{202E}' // embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner and invisible operators
            | '\u{2066}'..='\u{2069}' // isolates
            | '\u{FEFF}' // zero-width no-break space
            // Control characters (BEL, ESC, …) but tab and line ends:
            // a team's name from GitHub may hold them.
            | '\u{0}'..='\u{8}'
            | '\u{B}'..='\u{C}'
            | '\u{E}'..='\u{1F}'
            | '\u{7F}'..='\u{9F}'
    )
}

/// `text` with every [`is_invisible`] character written as `\u{XXXX}`;
/// borrowed when there is none.
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.contains(is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_and_zero_width_characters_should_be_escaped() {
        assert_eq!(
            escape_invisible("evil\u{202E}txt.exe"),
            "evil\\u{202E}txt.exe"
        );
        assert_eq!(
            escape_invisible("a\u{200B}b\u{2066}c"),
            "a\\u{200B}b\\u{2066}c"
        );
        assert_eq!(escape_invisible("\u{FEFF}x"), "\\u{FEFF}x");
    }

    #[test]
    fn other_text_should_be_left_alone_and_borrowed() {
        let text = "café 漢字 → `code` \u{05D0}";
        assert!(matches!(escape_invisible(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escaping_twice_should_change_nothing_more() {
        let once = escape_invisible("x\u{202E}y").into_owned();
        assert_eq!(escape_invisible(&once), once);
    }
}
