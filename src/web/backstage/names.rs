//! What Backstage's catalog accepts as a name, a tag and an owner: the
//! rules of its `catalog-model` validators (`isValidObjectName` for an
//! entity's name, `isValidDnsLabel` for a tag), and the entity reference an
//! entry's owner becomes (`group:default/SLUG`, `user:default/LOGIN`).

use crate::project::OwnerStatus;

/// Longest name or tag Backstage accepts.
const MAX_CHARS: usize = 63;

/// Backstage's `isValidObjectName`: 1 to 63 characters, letters, digits
/// and `-`, `_`, `.` between letters or digits.
pub fn is_valid_name(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    (1..=MAX_CHARS).contains(&name.len())
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name
            .chars()
            .all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
}

/// Backstage's `isValidDnsLabel`, its rule for tags: 1 to 63 lowercase
/// letters and digits, in runs joined by single `-`.
pub fn is_valid_tag(tag: &str) -> bool {
    (1..=MAX_CHARS).contains(&tag.len())
        && tag.split('-').all(|run| {
            !run.is_empty()
                && run
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// The entity reference of an owner: a team (current, renamed or deleted:
/// its slug now) is `group:default/SLUG`, a member `user:default/LOGIN`;
/// an owner the directory did not resolve is read as the file writes it
/// (`@login` a user, `@org/slug` or `slug` a group). `None` when the name
/// is not one Backstage accepts.
pub fn owner_ref(written: &str, status: OwnerStatus, slug: Option<&str>) -> Option<String> {
    let (kind, name) = match (status, slug) {
        (OwnerStatus::Member, Some(login)) => ("user", login),
        (OwnerStatus::Team | OwnerStatus::Renamed | OwnerStatus::Deleted, Some(slug)) => {
            ("group", slug)
        }
        _ => as_written(written.trim()),
    };
    is_valid_name(name).then(|| format!("{kind}:default/{name}"))
}

/// An owner as a file writes it: `@login`, `@org/slug` or `slug`.
fn as_written(owner: &str) -> (&'static str, &str) {
    match owner.strip_prefix('@') {
        Some(rest) => match rest.split_once('/') {
            Some((_org, slug)) => ("group", slug),
            None => ("user", rest),
        },
        None => ("group", owner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_should_follow_backstages_object_name_rule() {
        for good in ["a", "checkout-api", "Lorem.Service_2", &"a".repeat(63)] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a b", "é", "a/b", &"a".repeat(64)] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn tags_should_follow_backstages_dns_label_rule() {
        for good in ["grpc", "pci-dss", "v2"] {
            assert!(is_valid_tag(good), "{good}");
        }
        for bad in ["", "a--b", "-a", "a-", "Grpc", "a_b", &"a".repeat(64)] {
            assert!(!is_valid_tag(bad), "{bad}");
        }
    }

    #[test]
    fn a_resolved_owner_should_be_referred_to_by_its_current_name() {
        let team = owner_ref("payments", OwnerStatus::Team, Some("payments"));
        assert_eq!(team.as_deref(), Some("group:default/payments"));
        let renamed = owner_ref("payments", OwnerStatus::Renamed, Some("payments-core"));
        assert_eq!(renamed.as_deref(), Some("group:default/payments-core"));
        let member = owner_ref("@Alice", OwnerStatus::Member, Some("alice"));
        assert_eq!(member.as_deref(), Some("user:default/alice"));
    }

    #[test]
    fn an_unresolved_owner_should_be_read_as_the_file_writes_it() {
        let cases = [
            ("@acme/payments", Some("group:default/payments")),
            ("@bob", Some("user:default/bob")),
            ("team-x", Some("group:default/team-x")),
            ("Payments Team", None),
            ("", None),
        ];
        for (written, expected) in cases {
            let got = owner_ref(written, OwnerStatus::Unknown, None);
            assert_eq!(got.as_deref(), expected, "{written}");
        }
    }
}
