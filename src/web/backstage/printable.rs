//! JSON written within YAML's printable set: `serde_json` escapes the C0
//! controls (JSON requires it) but writes DEL, the C1 controls and
//! U+FFFE/U+FFFF as they are, which YAML 1.2 readers refuse (PyYAML
//! refuses the whole stream for one `\u{80}` in a description). This
//! formatter writes those as `\uXXXX` too, an escape JSON and YAML's
//! double-quoted strings both read; everything else is `serde_json`'s
//! pretty form, unchanged.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

/// Whether `c` is left out of YAML 1.2's printable set, or is a C1
/// control (U+0085 among them, which YAML allows but which is a control
/// all the same). TAB and LF are printable; C0 controls never reach the
/// formatter unescaped.
pub fn unprintable(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
}

/// Writes `value` in its pretty JSON form, every character outside YAML's
/// printable set escaped.
pub fn write_pretty(out: &mut Vec<u8>, value: &impl Serialize) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, Printable::default());
    value.serialize(&mut serializer)
}

/// `serde_json`'s pretty formatter, with strings kept printable.
#[derive(Default)]
struct Printable(PrettyFormatter<'static>);

impl Formatter for Printable {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| unprintable(*c)) {
            writer.write_all(&rest.as_bytes()[..at])?;
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        write_pretty(&mut out, &serde_json::json!({ "d": text })).expect("plain data");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn controls_del_and_noncharacters_should_be_escaped_and_read_back_as_they_were() {
        let text = "a\u{80}b\u{7f}c\u{85}d\u{9f}e\u{fffe}f\u{ffff}g\u{1b}\ttab é ✓";
        let out = written(text);
        assert!(!out.chars().any(unprintable), "{out:?}");
        assert!(out.contains("a\\u0080b\\u007fc\\u0085d\\u009fe\\ufffef\\uffffg\\u001b\\ttab é ✓"));
        let back: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(back["d"], text);
    }

    #[test]
    fn the_pretty_form_should_be_serde_jsons_own() {
        let value = serde_json::json!({"a": [1, {"b": "c"}], "d": {}});
        let mut out = Vec::new();
        write_pretty(&mut out, &value).expect("plain data");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            serde_json::to_string_pretty(&value).expect("JSON")
        );
    }
}
