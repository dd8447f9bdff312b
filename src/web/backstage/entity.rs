//! An entry as a Backstage `Component`, a system as a `System` and a team
//! as a `Group` (docs/backstage.md says what maps to what): the documents
//! of the export, and what is left out because Backstage would refuse a
//! name or the reader may not see an owner.

use std::collections::BTreeMap;

use serde::Serialize;

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use super::names::{is_valid_name, is_valid_tag, owner_ref};
use crate::project::OwnerStatus;
use crate::registry::read_models::export::ExportEntry;

/// The catalog format every document is written in.
const API_VERSION: &str = "backstage.io/v1alpha1";

/// A lifecycle for an entry that declares none: Backstage requires one.
pub const NO_LIFECYCLE: &str = "unknown";

/// One catalog entity.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Document<'a, S> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata<'a>,
    spec: S,
}

/// An entity's `metadata`.
#[derive(Debug, Default, Serialize)]
pub struct Metadata<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tags: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    links: Vec<LinkDoc<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: BTreeMap<&'static str, String>,
}

/// A link of `metadata.links`.
#[derive(Debug, Serialize)]
struct LinkDoc<'a> {
    url: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    title: &'a str,
}

/// A `Component`'s `spec`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentSpec<'a> {
    r#type: &'static str,
    lifecycle: &'a str,
    owner: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<String>,
}

impl Document<'_, ComponentSpec<'_>> {
    /// The component's owner, as a reference.
    pub fn owner(&self) -> &str {
        &self.spec.owner
    }
}

impl<'a> Document<'a, ComponentSpec<'a>> {
    /// The names of the components it depends on.
    pub fn dependencies(&self) -> impl Iterator<Item = &str> {
        self.spec
            .depends_on
            .iter()
            .filter_map(|d| d.strip_prefix(COMPONENT_REF))
    }

    /// Keeps only the dependencies on components `exported` says are in
    /// the export, so that none dangles.
    pub fn keep_dependencies(&mut self, exported: impl Fn(&str) -> bool) {
        self.spec
            .depends_on
            .retain(|d| d.strip_prefix(COMPONENT_REF).is_some_and(&exported));
    }

    /// The group that owns it, when a group does: its name.
    pub fn owning_group(&self) -> Option<&str> {
        self.spec.owner.strip_prefix(GROUP_REF)
    }
}

/// How a component is referred to, before its name.
const COMPONENT_REF: &str = "component:default/";

/// How a group is referred to, before its name.
const GROUP_REF: &str = "group:default/";

/// A `System`'s `spec`.
#[derive(Debug, Serialize)]
pub struct SystemSpec {
    owner: String,
}

/// A `Group`'s `spec`: a team, its children left for Backstage to find
/// from their `parent`.
#[derive(Debug, Serialize)]
pub struct GroupSpec {
    r#type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    children: [String; 0],
}

/// A `Group`'s `spec.profile`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    display_name: String,
}

/// Why an entry is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its name is not one Backstage accepts.
    Name,
    /// Its owner's name is not one Backstage accepts.
    OwnerName,
    /// Its owner is withheld from the reader (docs/contract.md#what-a-reader-without-credentials-sees).
    OwnerHidden,
}

/// An entry as a component, with the number of its tags left out, or why
/// it is left out itself.
pub struct Component<'a> {
    pub document: Document<'a, ComponentSpec<'a>>,
    pub tags_left_out: usize,
    /// The system it belongs to, when Backstage accepts that name.
    pub system: Option<&'a str>,
}

/// `row` as a Backstage `Component`.
pub fn component(row: &ExportEntry) -> Result<Component<'_>, Refused> {
    let entry = &row.entry;
    if !is_valid_name(&entry.name) {
        return Err(Refused::Name);
    }
    if entry.resolved.owner_status == OwnerStatus::Hidden {
        return Err(Refused::OwnerHidden);
    }
    let owner = owner_ref(
        &entry.fields.owner,
        entry.resolved.owner_status,
        entry.resolved.owner_slug.as_deref(),
    )
    .ok_or(Refused::OwnerName)?;
    let tags: Vec<&str> = entry
        .fields
        .tags
        .iter()
        .map(String::as_str)
        .filter(|t| is_valid_tag(t))
        .collect();
    let system = entry.fields.system.as_deref().filter(|s| is_valid_name(s));
    let document = Document {
        api_version: API_VERSION,
        kind: "Component",
        metadata: Metadata {
            name: &entry.name,
            description: entry.fields.description.as_deref(),
            tags,
            links: entry
                .fields
                .links
                .iter()
                .map(|l| LinkDoc {
                    url: &l.url,
                    title: &l.title,
                })
                .collect(),
            annotations: annotations(row),
        },
        spec: ComponentSpec {
            r#type: "service",
            lifecycle: entry.fields.lifecycle.as_deref().unwrap_or(NO_LIFECYCLE),
            owner,
            system: system.map(|s| format!("system:default/{s}")),
            depends_on: entry
                .fields
                .depends_on
                .iter()
                .filter(|d| is_valid_name(d))
                .map(|d| format!("{COMPONENT_REF}{d}"))
                .collect(),
        },
    };
    let tags_left_out = entry.fields.tags.len() - document.metadata.tags.len();
    Ok(Component {
        document,
        tags_left_out,
        system,
    })
}

/// Where the entry comes from on GitHub: the repository and its project
/// file at the head of the default branch. None for a local folder.
fn annotations(row: &ExportEntry) -> BTreeMap<&'static str, String> {
    let mut annotations = BTreeMap::new();
    if let Some(html_url) = row.html_url.as_deref() {
        annotations.insert("github.com/project-slug", row.entry.repo.clone());
        let branch = row.default_branch.as_deref().unwrap_or("HEAD");
        annotations.insert(
            "backstage.io/source-location",
            format!(
                "url:{}/blob/{}/{}",
                html_url.trim_end_matches('/'),
                utf8_percent_encode(branch, IN_PATH),
                utf8_percent_encode(&row.entry.path, IN_PATH)
            ),
        );
    }
    annotations
}

/// What a branch or a file's path may not hold as it is in a URL's path:
/// its `/` kept (a branch `release/1.0` is two segments on GitHub too),
/// anything that would end the path (`?`, `#`), `%` itself, and whatever
/// is not safe in a URL.
const IN_PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A team as a Backstage `Group`: `display_name` its name when the
/// directory knows it, `parent` the group it belongs to when the reader
/// may see that one.
pub fn group<'a>(
    name: &'a str,
    display_name: Option<&str>,
    parent: Option<&str>,
) -> Document<'a, GroupSpec> {
    Document {
        api_version: API_VERSION,
        kind: "Group",
        metadata: Metadata {
            name,
            ..Metadata::default()
        },
        spec: GroupSpec {
            r#type: "team",
            profile: display_name
                .filter(|n| !n.trim().is_empty())
                .map(|n| Profile {
                    display_name: n.to_owned(),
                }),
            parent: parent.map(|p| format!("{GROUP_REF}{p}")),
            children: [],
        },
    }
}

/// A system as a Backstage `System`, owned by `owner` (a reference).
pub fn system<'a>(name: &'a str, owner: &str) -> Document<'a, SystemSpec> {
    Document {
        api_version: API_VERSION,
        kind: "System",
        metadata: Metadata {
            name,
            ..Metadata::default()
        },
        spec: SystemSpec {
            owner: owner.to_owned(),
        },
    }
}

/// The systems the components name, each with how many of its components
/// each owner has.
#[derive(Debug, Default)]
pub struct Systems(BTreeMap<String, BTreeMap<String, usize>>);

impl Systems {
    /// Counts a component of `system` owned by `owner`.
    pub fn add(&mut self, system: &str, owner: &str) {
        let owners = self.0.entry(system.to_owned()).or_default();
        *owners.entry(owner.to_owned()).or_default() += 1;
    }

    /// How many systems there are.
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Each system by name with its owner: the owner most of its
    /// components share, ties in name order.
    pub fn owners(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().filter_map(|(system, owners)| {
            let most = owners.values().copied().max()?;
            let owner = owners.iter().find(|(_, n)| **n == most)?.0;
            Some((system.as_str(), owner.as_str()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_systems_owner_should_be_the_one_most_of_its_components_share_ties_in_name_order() {
        let mut systems = Systems::default();
        for (system, owner) in [
            ("shop", "group:default/b"),
            ("shop", "group:default/a"),
            ("shop", "group:default/b"),
            ("tied", "user:default/zed"),
            ("tied", "group:default/core"),
        ] {
            systems.add(system, owner);
        }
        let owners: Vec<_> = systems.owners().collect();
        assert_eq!(
            owners,
            [("shop", "group:default/b"), ("tied", "group:default/core")]
        );
        assert_eq!(systems.count(), 2);
    }
}
