//! The preview of a merge: which entries a project file would add, change
//! (field by field, old → new), remove, and leave as they are, compared
//! with what the registry holds for the repository now.

use std::collections::BTreeMap;

use super::fields::shown_fields;
use super::Project;

crate::row! {
    /// An entry as registered now, with the fields a preview compares.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RegisteredEntry {
        pub name: String,
        /// The project file it came from.
        pub path: String,
        pub fields: super::fields::Fields as flatten,
    }
}

/// A name another repository owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedElsewhere {
    pub name: String,
    /// `owner/name` of the owning repository.
    pub owner_repo: String,
}

/// What a preview needs to know about the registry, read at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The repository's entries, by name.
    pub entries: Vec<RegisteredEntry>,
    /// Which of the asked names other repositories own.
    pub taken: Vec<OwnedElsewhere>,
}

/// An entry's fields as text, in the order people read them.
pub type Fields = Vec<(&'static str, String)>;

/// One changed field of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    pub field: &'static str,
    pub old: String,
    pub new: String,
}

/// What a merge would do to the repository's entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preview {
    pub added: Vec<(String, Fields)>,
    pub changed: Vec<(String, Vec<FieldChange>)>,
    pub removed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl Preview {
    /// Compares the file's projects with the registered entries. Names the
    /// file declares but another repository owns are left out (they are
    /// problems, not changes).
    pub fn compare(projects: &[Project], registered: &[RegisteredEntry], taken: &[&str]) -> Self {
        let old: BTreeMap<&str, Fields> = registered
            .iter()
            .map(|e| (e.name.as_str(), shown_fields(&e.fields)))
            .collect();
        let mut preview = Preview::default();
        let mut declared: Vec<&Project> = projects.iter().collect();
        declared.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        for project in &declared {
            let name = project.name.as_str();
            if taken.contains(&name) {
                continue;
            }
            let new = shown_fields(&project.fields);
            match old.get(name) {
                None => preview.added.push((name.to_owned(), new)),
                Some(before) => {
                    let changes: Vec<FieldChange> = before
                        .iter()
                        .zip(&new)
                        .filter(|((_, a), (_, b))| a != b)
                        .map(|((field, a), (_, b))| FieldChange {
                            field,
                            old: a.clone(),
                            new: b.clone(),
                        })
                        .collect();
                    if changes.is_empty() {
                        preview.unchanged.push(name.to_owned());
                    } else {
                        preview.changed.push((name.to_owned(), changes));
                    }
                }
            }
        }
        preview.removed = old
            .keys()
            .filter(|name| !declared.iter().any(|p| p.name.as_str() == **name))
            .map(|name| (*name).to_owned())
            .collect();
        preview
    }

    /// Every registered entry removed (the file is gone from the head).
    pub fn all_removed(registered: &[RegisteredEntry]) -> Self {
        Preview {
            removed: registered.iter().map(|e| e.name.clone()).collect(),
            ..Preview::default()
        }
    }

    /// `adds 1, changes 1, removes 0`.
    pub fn counts(&self) -> String {
        format!(
            "adds {}, changes {}, removes {}",
            self.added.len(),
            self.changed.len(),
            self.removed.len()
        )
    }

    /// The preview in Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if !self.removed.is_empty() {
            out.push_str(&format!(
                "**Merging removes {} {} from the registry: {}.**\n\n",
                self.removed.len(),
                plural(self.removed.len(), "entry", "entries"),
                self.removed.join(", ")
            ));
        }
        if !self.added.is_empty() {
            out.push_str("### Added\n\n");
            for (name, fields) in &self.added {
                out.push_str(&format!("- **{name}**\n"));
                for (field, value) in fields {
                    out.push_str(&format!("  - {field}: {}\n", code(value)));
                }
            }
            out.push('\n');
        }
        if !self.changed.is_empty() {
            out.push_str("### Changed\n\n");
            for (name, changes) in &self.changed {
                out.push_str(&format!("- **{name}**\n"));
                for change in changes {
                    out.push_str(&format!(
                        "  - {}: {} → {}\n",
                        change.field,
                        code(&change.old),
                        code(&change.new)
                    ));
                }
            }
            out.push('\n');
        }
        if !self.removed.is_empty() {
            out.push_str("### Removed\n\n");
            for name in &self.removed {
                out.push_str(&format!("- **{name}**\n"));
            }
            out.push('\n');
        }
        if !self.unchanged.is_empty() {
            out.push_str("### Unchanged\n\n");
            out.push_str(&self.unchanged.join(", "));
            out.push_str("\n\n");
        }
        if out.is_empty() {
            out.push_str("Nothing to register: the file declares no entry.\n");
        }
        out
    }
}

/// `one` for 1, `many` otherwise.
pub fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// A value as inline code, on one line, whatever it holds.
fn code(value: &str) -> String {
    let flat: String = value
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect();
    format!("`{flat}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(name: &str, owner: &str) -> RegisteredEntry {
        RegisteredEntry {
            name: name.into(),
            path: "project.yaml".into(),
            fields: crate::project::Fields {
                owner: owner.into(),
                description: None,
                lifecycle: Some("production".into()),
                tags: vec!["a".into()],
                links: vec![crate::project::Link {
                    title: "Runbook".into(),
                    url: "https://r.example".into(),
                }],
                labels: BTreeMap::from([("tier".into(), "1".into())]),
                ..crate::project::Fields::default()
            },
        }
    }

    fn projects(text: &str) -> Vec<Project> {
        super::super::parse("project.yaml", text.as_bytes())
            .expect("valid")
            .projects
    }

    #[test]
    fn compare_should_list_added_changed_removed_and_unchanged() {
        let file = projects(
            "projects:
  - name: same
    owner: t
    lifecycle: production
    tags: [a]
    links: [{title: Runbook, url: 'https://r.example'}]
    labels: {tier: '1'}
  - name: moved
    owner: new-team
    lifecycle: production
    tags: [a]
    links: [{title: Runbook, url: 'https://r.example'}]
    labels: {tier: '1'}
  - name: fresh
    owner: t
",
        );
        let old = vec![
            registered("same", "t"),
            registered("moved", "old-team"),
            registered("gone", "t"),
        ];
        let preview = Preview::compare(&file, &old, &[]);
        assert_eq!(
            preview
                .added
                .iter()
                .map(|a| a.0.as_str())
                .collect::<Vec<_>>(),
            ["fresh"]
        );
        assert_eq!(
            preview.changed,
            vec![(
                "moved".to_owned(),
                vec![FieldChange {
                    field: "owner",
                    old: "old-team".into(),
                    new: "new-team".into()
                }]
            )]
        );
        assert_eq!(preview.removed, ["gone"]);
        assert_eq!(preview.unchanged, ["same"]);
        assert_eq!(preview.counts(), "adds 1, changes 1, removes 1");
        let text = preview.markdown();
        assert!(text.contains("**Merging removes 1 entry from the registry: gone.**"));
        assert!(
            text.contains("  - owner: `old-team` → `new-team`"),
            "{text}"
        );
    }

    #[test]
    fn a_taken_name_should_be_no_change() {
        let file = projects("name: theirs\nowner: t\n");
        let preview = Preview::compare(&file, &[], &["theirs"]);
        assert_eq!(preview, Preview::default());
    }
}
