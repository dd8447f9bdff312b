//! What the delivery log keeps of any payload (its `action` and
//! `repository.full_name`), read straight from the body.
//!
//! A `serde_json::Value` of the whole body would cost about ten times the
//! body's size (a 25 MiB payload listing 300,000 repositories took hundreds
//! of MiB); this reads the two fields and skips the rest without keeping it.
//! Any JSON is accepted: a body that is not an object, or fields of another
//! type, just leave the fields empty. Nesting deeper than `serde_json`'s
//! recursion limit is still refused, as the `Value` parse refused it.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The fields every delivery's log row shows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The payload's `action`, when it is a string.
    pub action: Option<String>,
    /// The payload's `repository.full_name`, when it is a string.
    pub repo: Option<String>,
}

/// Visitor methods for the values a visitor does not look into: each is
/// read (and dropped) and gives `$empty`.
macro_rules! skip_the_rest {
    ($value:ty, $empty:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$value, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok($empty)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$value, E> {
            Ok($empty)
        }
        fn visit_unit<E>(self) -> Result<$value, E> {
            Ok($empty)
        }
    };
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = Envelope;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                // A repeated key: the last one wins, as in `serde_json::Value`.
                let mut envelope = Envelope::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "action" => envelope.action = map.next_value::<Text>()?.0,
                        "repository" => envelope.repo = map.next_value::<FullName>()?.0,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(envelope)
            }
            fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
                Ok(Envelope::default())
            }
            skip_the_rest!(Envelope, Envelope::default());
        }
        deserializer.deserialize_any(Top)
    }
}

/// A string, or `None` for any other value (or none at all): how the log
/// reads `action` and `full_name`, also inside the typed push payload.
#[derive(Debug, Default)]
pub(super) struct Text(pub(super) Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E>(self, text: &str) -> Result<Text, E> {
                Ok(Text(Some(text.to_owned())))
            }
            fn visit_string<E>(self, text: String) -> Result<Text, E> {
                Ok(Text(Some(text)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
                while map.next_entry::<Skip, Skip>()?.is_some() {}
                Ok(Text(None))
            }
            skip_the_rest!(Text, Text(None));
        }
        deserializer.deserialize_any(TextVisitor)
    }
}

/// An object's `full_name` when it is a string, or `None`.
struct FullName(Option<String>);

impl<'de> Deserialize<'de> for FullName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FullNameVisitor;
        impl<'de> Visitor<'de> for FullNameVisitor {
            type Value = FullName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FullName, A::Error> {
                let mut full_name = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "full_name" {
                        full_name = map.next_value::<Text>()?.0;
                    } else {
                        map.next_value::<Skip>()?;
                    }
                }
                Ok(FullName(full_name))
            }
            fn visit_str<E>(self, _: &str) -> Result<FullName, E> {
                Ok(FullName(None))
            }
            skip_the_rest!(FullName, FullName(None));
        }
        deserializer.deserialize_any(FullNameVisitor)
    }
}

/// Any JSON value, read and dropped. Unlike `IgnoredAny` it goes through
/// `deserialize_any`, so `serde_json`'s recursion limit still applies.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SkipVisitor;
        impl<'de> Visitor<'de> for SkipVisitor {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
                while map.next_entry::<Skip, Skip>()?.is_some() {}
                Ok(Skip)
            }
            fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
                Ok(Skip)
            }
            skip_the_rest!(Skip, Skip);
        }
        deserializer.deserialize_any(SkipVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(body: &str) -> Option<Envelope> {
        serde_json::from_str(body).ok()
    }

    #[test]
    fn envelope_should_read_action_and_full_name_and_skip_the_rest() {
        let body = r#"{"zen": [1, {"a": null}], "action": "opened",
            "repository": {"id": 1, "full_name": "acme/checkout", "owner": {"login": "acme"}},
            "sender": {"login": "x"}}"#;
        assert_eq!(
            envelope(body),
            Some(Envelope {
                action: Some("opened".to_owned()),
                repo: Some("acme/checkout".to_owned()),
            })
        );
    }

    #[test]
    fn envelope_should_leave_fields_of_another_type_empty() {
        for body in [
            r#"{"action": 5, "repository": "acme/checkout"}"#,
            r#"{"action": ["a"], "repository": {"full_name": {"x": 1}}}"#,
            r#"{"action": null, "repository": [1, 2]}"#,
            "[1, 2, 3]",
            "\"text\"",
            "12",
            "true",
            "null",
        ] {
            assert_eq!(envelope(body), Some(Envelope::default()), "{body}");
        }
    }

    #[test]
    fn envelope_should_let_the_last_repeated_key_win() {
        let body = r#"{"action": "a", "action": "b", "repository": {"full_name": "x/y"}}"#;
        assert_eq!(envelope(body).and_then(|e| e.action), Some("b".to_owned()));
    }

    #[test]
    fn envelope_should_refuse_what_is_not_json() {
        for body in ["", "{", "{\"action\": }", "[1, 2", "{} {}", "nope"] {
            assert_eq!(envelope(body), None, "{body:?}");
        }
    }

    #[test]
    fn envelope_should_refuse_nesting_past_the_recursion_limit() {
        let deep = "[".repeat(10_000);
        let error = serde_json::from_str::<Envelope>(&deep).err();
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("recursion limit exceeded"), "{message}");
        let deep_inside = format!(r#"{{"action": "a", "x": {}}}"#, "{\"a\":".repeat(10_000));
        let error = serde_json::from_str::<Envelope>(&deep_inside).err();
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("recursion limit exceeded"), "{message}");
    }
}
