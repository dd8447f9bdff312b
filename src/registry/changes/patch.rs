//! How a `changed` row stores its `before`: only the old values of the
//! fields that moved, since `after` is stored whole beside it. An entry
//! carries every field in both versions, so `after` with those fields put
//! back is `before` again.

use serde_json::{Map, Value};

/// The fields of `before` whose value differs in `after`, with their old
/// values (an empty object when nothing but a missing field differs).
pub(crate) fn moved_fields(before: &Value, after: &Value) -> Value {
    let Some(old) = before.as_object() else {
        return before.clone();
    };
    let moved: Map<String, Value> = old
        .iter()
        .filter(|(field, value)| after.get(field.as_str()) != Some(*value))
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect();
    Value::Object(moved)
}

/// `before` again: `after` with the stored old values put back.
pub(crate) fn restore(after: Option<&Value>, moved: Option<&Value>) -> Value {
    let mut before = after.cloned().unwrap_or(Value::Null);
    match (before.as_object_mut(), moved.and_then(Value::as_object)) {
        (Some(fields), Some(old)) => {
            for (field, value) in old {
                fields.insert(field.clone(), value.clone());
            }
            before
        }
        // Not an object: stored whole.
        _ => moved.cloned().unwrap_or(before),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn restore_should_give_back_the_whole_before_from_the_moved_fields() {
        let before = json!({"name": "a", "owner": "x", "labels": {"t": "1"}, "description": null});
        let after = json!({"name": "a", "owner": "y", "labels": {"t": "1"}, "description": "d"});
        let moved = moved_fields(&before, &after);
        assert_eq!(moved, json!({"owner": "x", "description": null}));
        assert_eq!(restore(Some(&after), Some(&moved)), before);
    }

    #[test]
    fn equal_versions_should_store_nothing() {
        let same = json!({"name": "a"});
        assert_eq!(moved_fields(&same, &same), json!({}));
        assert_eq!(restore(Some(&same), Some(&json!({}))), same);
    }
}
