//! An entry as a Backstage `Component`, and a system as a `System`
//! (docs/backstage.md says what maps to what): the documents of the export,
//! and what is left out because Backstage would refuse a name.

use std::collections::BTreeMap;

use serde::Serialize;

use super::names::{is_valid_name, is_valid_tag, owner_ref};
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

/// A `System`'s `spec`.
#[derive(Debug, Serialize)]
pub struct SystemSpec {
    owner: String,
}

/// Why an entry is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its name is not one Backstage accepts.
    Name,
    /// Its owner's name is not one Backstage accepts.
    Owner,
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
    let owner = owner_ref(
        &entry.fields.owner,
        entry.resolved.owner_status,
        entry.resolved.owner_slug.as_deref(),
    )
    .ok_or(Refused::Owner)?;
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
                .map(|d| format!("component:default/{d}"))
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
                "url:{}/blob/{branch}/{}",
                html_url.trim_end_matches('/'),
                row.entry.path
            ),
        );
    }
    annotations
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
