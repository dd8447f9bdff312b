//! The fields of a project, declared once.
//!
//! [`FIELDS`] is the one table of an entry's fields beside its `name`:
//! what each is called (in the file, the JSON, and the `entries` column of
//! the same name), which rule reads it from the file ([`Rule`]), and how it
//! reads as text. [`Fields`] holds the values a file declares and
//! [`ResolvedOwner`] what Roster found its owner to be; both are read and
//! written by name, so the rules (`rules.rs`), the stored row (the
//! registry's SQL takes its column list from [`stored_columns`]), the JSON,
//! the change log's diff, the preview of a merge and the pages all follow
//! the table. Adding a field: a row here and a member of [`Fields`], a
//! migration adding the column, a line in the templates that show it, and
//! a test (docs/architecture.md#adding-a-field).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest `owner`, in characters.
pub(crate) const MAX_OWNER_CHARS: usize = 100;
/// The longest `description`, in characters.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1000;
pub(crate) const MAX_TAGS: usize = 20;
pub(crate) const MAX_LABELS: usize = 50;
pub(crate) const MAX_LINKS: usize = 20;
/// The most projects one project may depend on (docs/contract.md#relations).
pub const MAX_DEPENDS_ON: usize = 50;

/// The words `lifecycle` takes, in the order people read them.
pub const LIFECYCLES: &[&str] = &["experimental", "production", "deprecated"];

/// How a field is read from the project file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Text of at most `max_chars` characters; a required one must be
    /// given and not blank, an optional one may be null.
    Text { required: bool, max_chars: usize },
    /// One of a few words, or null.
    Word(&'static [&'static str]),
    /// A list of at most `max` name-like words.
    Names { max: usize },
    /// One name-like word (1–63 characters), or null.
    Name,
    /// A list of at most `max` project names, each given once and none the
    /// project's own.
    Dependencies { max: usize },
    /// A list of at most `max` `{title, url}` links.
    Links { max: usize },
    /// A mapping of at most `max` keys to text.
    Labels { max: usize },
    /// Not in the file: what Roster resolved, stored and shown beside it.
    Resolved,
}

/// One field of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Its key in the file and the JSON, and its column in `entries`.
    pub name: &'static str,
    pub rule: Rule,
}

impl Field {
    /// Whether the project file declares it (rather than Roster resolving it).
    pub fn in_file(&self) -> bool {
        self.rule != Rule::Resolved
    }
}

/// Every field of an entry beside its name, in the order people read them.
pub const FIELDS: &[Field] = &[
    Field {
        name: "owner",
        rule: Rule::Text {
            required: true,
            max_chars: MAX_OWNER_CHARS,
        },
    },
    Field {
        name: "description",
        rule: Rule::Text {
            required: false,
            max_chars: MAX_DESCRIPTION_CHARS,
        },
    },
    Field {
        name: "lifecycle",
        rule: Rule::Word(LIFECYCLES),
    },
    Field {
        name: "tags",
        rule: Rule::Names { max: MAX_TAGS },
    },
    Field {
        name: "links",
        rule: Rule::Links { max: MAX_LINKS },
    },
    Field {
        name: "labels",
        rule: Rule::Labels { max: MAX_LABELS },
    },
    Field {
        name: "depends_on",
        rule: Rule::Dependencies {
            max: MAX_DEPENDS_ON,
        },
    },
    Field {
        name: "system",
        rule: Rule::Name,
    },
    Field {
        name: "owner_status",
        rule: Rule::Resolved,
    },
    Field {
        name: "owner_team_id",
        rule: Rule::Resolved,
    },
    Field {
        name: "owner_slug",
        rule: Rule::Resolved,
    },
];

/// The fields a project file declares, `name` first (what an unknown key
/// is compared with).
pub fn file_keys() -> Vec<&'static str> {
    std::iter::once("name")
        .chain(FIELDS.iter().filter(|f| f.in_file()).map(|f| f.name))
        .collect()
}

/// The fields the file declares, in table order.
pub fn file_fields() -> impl Iterator<Item = &'static Field> {
    FIELDS.iter().filter(|f| f.in_file())
}

/// Every stored field's column, comma-separated (`owner, description, …`),
/// for the registry's statements on `entries`.
pub fn stored_columns() -> String {
    FIELDS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

/// The columns of the fields Roster resolves, comma-separated: what
/// following a renamed or deleted team rewrites.
pub fn resolved_columns() -> String {
    FIELDS
        .iter()
        .filter(|f| !f.in_file())
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ")
}

crate::row! {
    /// What a project file declares for one project, beside its name.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(default)]
    pub struct Fields {
        /// Who owns it, as the file says it (a team slug, `@org/slug` or `@login`).
        pub owner: String,
        pub description: Option<String>,
        /// One of [`LIFECYCLES`].
        pub lifecycle: Option<String>,
        pub tags: Vec<String>,
        pub links: Vec<Link> as json,
        pub labels: BTreeMap<String, String> as json,
        /// The projects it depends on, by name, resolved when read (docs/contract.md#relations).
        pub depends_on: Vec<String>,
        /// The product it is part of: projects sharing a system make one.
        pub system: Option<String>,
    }
}

/// A titled link (runbook, dashboard, docs); `url` is http or https.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Link {
    pub title: String,
    pub url: String,
}

crate::row! {
    /// What the owner was found to be in the organisation's directory, stored
    /// beside the file's text (which never changes because of it).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
    #[serde(default)]
    pub struct ResolvedOwner {
        pub owner_status: OwnerStatus as text,
        /// GitHub's id of the team the owner names (current, renamed or deleted).
        pub owner_team_id: Option<i64>,
        /// That team's slug now (a renamed team's new slug), or the member's login.
        pub owner_slug: Option<String>,
    }
}

/// What an entry's owner names now.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OwnerStatus {
    /// A current team of the organisation.
    Team,
    /// A member of the organisation (or the personal account itself).
    Member,
    /// Nobody of that name.
    Unknown,
    /// A team by a slug it had before: `owner_slug` says the current one.
    Renamed,
    /// A team that no longer exists.
    Deleted,
    /// Not checked (owner checking is off, or the account has no teams).
    #[default]
    Unchecked,
    /// Withheld from a reader without credentials: the owner names a
    /// secret team, a member, or nobody (never stored; docs/contract.md#what-a-reader-without-credentials-sees).
    Hidden,
}

impl OwnerStatus {
    /// Every status, in the order a filter offers them.
    pub const ALL: [OwnerStatus; 6] = [
        OwnerStatus::Team,
        OwnerStatus::Member,
        OwnerStatus::Unknown,
        OwnerStatus::Renamed,
        OwnerStatus::Deleted,
        OwnerStatus::Unchecked,
    ];

    /// The spelling used in JSON and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            OwnerStatus::Team => "team",
            OwnerStatus::Member => "member",
            OwnerStatus::Unknown => "unknown",
            OwnerStatus::Renamed => "renamed",
            OwnerStatus::Deleted => "deleted",
            OwnerStatus::Unchecked => "unchecked",
            OwnerStatus::Hidden => "hidden",
        }
    }
}

impl fmt::Display for OwnerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not an owner status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an owner status: {0:?}")]
pub struct UnknownOwnerStatus(pub String);

impl TryFrom<String> for OwnerStatus {
    type Error = UnknownOwnerStatus;

    fn try_from(text: String) -> Result<Self, UnknownOwnerStatus> {
        OwnerStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or(UnknownOwnerStatus(text))
    }
}

/// A field's value as people read it in a preview: the text, the items
/// joined, or `—` for nothing.
pub fn shown(rule: Rule, value: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let items: Vec<String> = match (rule, value) {
        (_, Value::Null) => Vec::new(),
        (Rule::Links { .. }, Value::Array(links)) => links
            .iter()
            .map(|l| format!("{} <{}>", text(&l["title"]), text(&l["url"])))
            .collect(),
        (_, Value::Array(items)) => items.iter().map(text).collect(),
        (_, Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| format!("{k}={}", text(v)))
            .collect(),
        (_, Value::String(s)) => vec![s.clone()],
        (_, other) => vec![other.to_string()],
    };
    if items.is_empty() {
        NONE.to_owned()
    } else {
        items.join(", ")
    }
}

/// How a preview shows a field with nothing in it.
pub const NONE: &str = "—";

/// The file's fields of `fields`, each as [`shown`] reads it, in table order.
pub fn shown_fields(fields: &Fields) -> Vec<(&'static str, String)> {
    let value = serde_json::to_value(fields).unwrap_or(Value::Null);
    file_fields()
        .map(|f| (f.name, shown(f.rule, &value[f.name])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table and the two structs name the same fields, in one order.
    #[test]
    fn the_table_should_name_every_member_of_the_structs_in_order() {
        let mut keys: Vec<String> = Vec::new();
        for value in [
            serde_json::to_value(Fields::default()),
            serde_json::to_value(ResolvedOwner::default()),
        ] {
            let Ok(Value::Object(map)) = value else {
                panic!("an object");
            };
            keys.extend(map.keys().cloned());
        }
        let mut names: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        let mut keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        names.sort_unstable();
        keys.sort_unstable();
        assert_eq!(names, keys);
        let in_order = "name owner description lifecycle tags links labels depends_on system";
        assert_eq!(file_keys().join(" "), in_order);
    }

    #[test]
    fn owner_status_should_read_back_what_it_writes() {
        for status in OwnerStatus::ALL {
            assert_eq!(OwnerStatus::try_from(status.to_string()), Ok(status));
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(Value::from(status.as_str()))
            );
        }
        assert!(OwnerStatus::try_from("team ".to_owned()).is_err());
    }

    #[test]
    fn shown_should_read_each_kind_of_value() {
        let fields = Fields {
            owner: "t".into(),
            tags: vec!["a".into(), "b".into()],
            links: vec![Link {
                title: "Runbook".into(),
                url: "https://r.example".into(),
            }],
            labels: BTreeMap::from([("tier".into(), "1".into())]),
            depends_on: vec!["db".into(), "cache".into()],
            ..Fields::default()
        };
        assert_eq!(
            shown_fields(&fields),
            vec![
                ("owner", "t".to_owned()),
                ("description", NONE.to_owned()),
                ("lifecycle", NONE.to_owned()),
                ("tags", "a, b".to_owned()),
                ("links", "Runbook <https://r.example>".to_owned()),
                ("labels", "tier=1".to_owned()),
                ("depends_on", "db, cache".to_owned()),
                ("system", NONE.to_owned()),
            ]
        );
    }
}
