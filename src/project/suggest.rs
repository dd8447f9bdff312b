//! "Did you mean …?" for a misspelt field: the closest known field by edit
//! distance, when it is close enough to be a likely typo.

/// The message for an unknown field among `known` (listed as given): names
/// the closest known field when it is a likely typo of `key`, and always
/// lists every known one.
pub(crate) fn unknown_field(key: &str, known: &[&str]) -> String {
    let listed = known.join(", ");
    match closest(key, known) {
        Some(field) => format!("unknown field, did you mean `{field}`? (expected one of {listed})"),
        None => format!("unknown field (expected one of {listed})"),
    }
}

/// The known field nearest to `key` (case aside), if at most a third of
/// its letters (and at least one) must change to get there.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    // Comparing a long key costs its length times the field's: hostile
    // keys are long, typos are not.
    if key.is_empty() || key.chars().count() > 40 {
        return None;
    }
    let key = key.to_lowercase();
    known
        .iter()
        .map(|field| (strsim::osa_distance(&key, field), *field))
        .filter(|(distance, field)| *distance <= (field.len() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, field)| field)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: [&str; 7] = [
        "name",
        "owner",
        "description",
        "lifecycle",
        "tags",
        "links",
        "labels",
    ];

    #[test]
    fn a_typo_should_be_answered_with_the_field_it_misspells() {
        for (typo, field) in [
            ("descripton", "description"),
            ("desciption", "description"),
            ("Description", "description"),
            ("onwer", "owner"),
            ("tag", "tags"),
            ("lifecyle", "lifecycle"),
            ("lables", "labels"),
        ] {
            assert_eq!(closest(typo, &FIELDS), Some(field), "{typo}");
        }
    }

    #[test]
    fn a_key_unlike_any_field_should_get_no_suggestion() {
        for key in ["colour", "k0", "x", "", "team", &"d".repeat(5000)] {
            assert_eq!(closest(key, &FIELDS), None, "{key}");
        }
    }

    #[test]
    fn the_message_should_suggest_and_still_list_every_field() {
        assert_eq!(
            unknown_field("descripton", &FIELDS),
            "unknown field, did you mean `description`? \
             (expected one of name, owner, description, lifecycle, tags, links, labels)"
        );
        assert_eq!(
            unknown_field("colour", &["title", "url"]),
            "unknown field (expected one of title, url)"
        );
    }
}
