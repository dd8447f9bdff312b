//! The rules of docs/contract.md#the-project-file, applied to a positioned YAML tree.
//!
//! The walk never stops at the first problem: it visits every field, records
//! each violation with the position of the offending node, and builds a
//! [`Project`] only for projects that broke no rule. It descends only as deep
//! as the format itself (at most five levels), so hostile nesting or alias
//! chains cannot make it recurse deeply. Its work is bounded too: it reads
//! at most [`MAX_PROJECTS`] items of `projects`, and keeps only the first
//! problems (see [`Issues`]).

use std::collections::HashMap;

use serde_json::{Map, Value as Json};

use super::fields::{file_fields, file_keys, Fields, Rule};
use super::issues::{Issue, Issues};
use super::model::Project;
use super::name::{check_name, ProjectName};
use super::suggest::unknown_field;
use super::tree::{Kind, NodeId, Pos, Tree};
use super::MAX_PROJECTS;

mod kinds;

/// A label's key and value, and a link's title and URL, in characters:
/// each is stored, logged and shown many times, so none may be large.
pub(crate) const MAX_LABEL_KEY_CHARS: usize = 63;
pub(crate) const MAX_LABEL_VALUE_CHARS: usize = 256;
pub(crate) const MAX_LINK_TITLE_CHARS: usize = 200;
pub(crate) const MAX_LINK_URL_CHARS: usize = 2000;

const LINK_FIELDS: &[&str] = &["title", "url"];

/// What a node holds, as far as the rules care.
enum Value<'t> {
    Null,
    Text(&'t str),
    List(&'t [NodeId]),
    Map(&'t [(NodeId, NodeId)]),
}

/// Reads every project of the document rooted at `root`; the projects are
/// only complete when no issue was found. Returns the first issues in
/// document order and how many more there were.
pub(crate) fn read(tree: &Tree, root: NodeId) -> (Vec<Project>, Vec<Issue>, usize) {
    let mut walk = Walk {
        tree,
        issues: Issues::default(),
        own_name: None,
    };
    let projects = walk.root(root);
    let (issues, more) = walk.issues.finish();
    (projects, issues, more)
}

struct Walk<'t> {
    tree: &'t Tree,
    issues: Issues,
    /// The name the project being read declares, as text: what its
    /// `depends_on` may not list.
    own_name: Option<&'t str>,
}

/// A project's name as declared, kept even when the rest of it is invalid so
/// that duplicates are still found.
struct Declared {
    name: ProjectName,
    pos: Pos,
    field: String,
}

fn join(prefix: &str, key: &str) -> String {
    // An empty key (`"": x`) is shown quoted, so that no field is blank.
    let key = if key.is_empty() { "\"\"" } else { key };
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A plain `~`, `null` or nothing: YAML's null, which no quoted text is.
pub(crate) fn is_null(text: &str, plain: bool) -> bool {
    plain && matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

impl<'t> Walk<'t> {
    fn issue(&mut self, id: NodeId, field: impl Into<String>, message: impl Into<String>) {
        self.issues.push(Issue {
            pos: Some(self.tree.nodes[id].pos),
            field: field.into(),
            message: message.into(),
        });
    }

    fn value(&self, id: NodeId) -> Value<'t> {
        let tree: &'t Tree = self.tree;
        match &tree.get(id).kind {
            Kind::Scalar { text, plain } if is_null(text, *plain) => Value::Null,
            Kind::Scalar { text, .. } => Value::Text(text),
            Kind::Seq(items) => Value::List(items),
            Kind::Map(entries) => Value::Map(entries),
            // `Tree::get` never returns an alias.
            Kind::Alias(_) => Value::Null,
        }
    }

    fn describe(&self, id: NodeId) -> &'static str {
        match self.value(id) {
            Value::Null => "nothing",
            Value::Text(_) => "a string",
            Value::List(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The text of a scalar (`""` for null); reports anything else.
    fn string(&mut self, id: NodeId, field: &str) -> Option<&'t str> {
        match self.value(id) {
            Value::Null => Some(""),
            Value::Text(text) => Some(text),
            _ => {
                let found = self.describe(id);
                self.issue(id, field, format!("must be a string, found {found}"));
                None
            }
        }
    }

    /// The items of a list (none for null); reports anything else.
    fn list(&mut self, id: NodeId, field: &str) -> Option<&'t [NodeId]> {
        match self.value(id) {
            Value::Null => Some(&[]),
            Value::List(items) => Some(items),
            _ => {
                let found = self.describe(id);
                self.issue(id, field, format!("must be a list, found {found}"));
                None
            }
        }
    }

    /// The entries of a mapping with their keys as text, reporting keys that
    /// are not strings and keys given twice (the later one is dropped).
    fn entries(
        &mut self,
        map: &'t [(NodeId, NodeId)],
        prefix: &str,
    ) -> Vec<(&'t str, NodeId, NodeId)> {
        let mut seen: HashMap<&'t str, Pos> = HashMap::new();
        let mut entries = Vec::with_capacity(map.len());
        for &(key, value) in map {
            let field = if prefix.is_empty() { "file" } else { prefix };
            let text = match self.value(key) {
                Value::Text(text) => text,
                Value::Null => {
                    self.issue(key, field, "keys must not be empty");
                    continue;
                }
                _ => {
                    self.issue(key, field, "keys must be strings");
                    continue;
                }
            };
            let pos = self.tree.nodes[key].pos;
            if let Some(first) = seen.get(text) {
                let message = format!("duplicate key (first given at line {})", first.line);
                self.issue(key, join(prefix, text), message);
                continue;
            }
            seen.insert(text, pos);
            entries.push((text, key, value));
        }
        entries
    }

    fn root(&mut self, root: NodeId) -> Vec<Project> {
        let Value::Map(map) = self.value(root) else {
            let found = self.describe(root);
            self.issue(
                root,
                "file",
                format!("must be a mapping with the fields of a project or with projects, found {found}"),
            );
            return Vec::new();
        };
        let has_projects = map
            .iter()
            .any(|&(key, _)| matches!(self.value(key), Value::Text("projects")));
        let mut declared = Vec::new();
        let mut projects = Vec::new();
        if has_projects {
            for (key, key_id, value) in self.entries(map, "") {
                if key != "projects" {
                    self.issue(
                        key_id,
                        join("", key),
                        "unknown field next to projects (a project's fields go inside its item of the list)",
                    );
                    continue;
                }
                match self.value(value) {
                    Value::List(items) if !items.is_empty() => {
                        if items.len() > MAX_PROJECTS {
                            let message = format!("at most {MAX_PROJECTS} entries");
                            self.issue(value, "projects", message);
                        }
                        // The items past the bound are not read: whatever
                        // they hold, the file is refused already.
                        for (index, &item) in items.iter().take(MAX_PROJECTS).enumerate() {
                            let prefix = format!("projects[{index}]");
                            projects.extend(self.project(item, &prefix, &mut declared));
                        }
                    }
                    Value::List(_) | Value::Null => {
                        self.issue(value, "projects", "must list at least one project");
                    }
                    _ => {
                        let found = self.describe(value);
                        self.issue(
                            value,
                            "projects",
                            format!("must be a list of projects, found {found}"),
                        );
                    }
                }
            }
        } else {
            projects.extend(self.project(root, "", &mut declared));
        }
        self.unique(&declared);
        projects
    }

    /// Reports every name declared a second time, at the later declaration.
    fn unique(&mut self, declared: &[Declared]) {
        let mut first: HashMap<&ProjectName, &Declared> = HashMap::new();
        for entry in declared {
            match first.get(&entry.name) {
                Some(earlier) => self.issues.push(Issue {
                    pos: Some(entry.pos),
                    field: entry.field.clone(),
                    message: format!(
                        "duplicate name \"{}\" (already declared by {} at line {})",
                        entry.name, earlier.field, earlier.pos.line
                    ),
                }),
                None => {
                    first.insert(&entry.name, entry);
                }
            }
        }
    }

    fn project(
        &mut self,
        id: NodeId,
        prefix: &str,
        declared: &mut Vec<Declared>,
    ) -> Option<Project> {
        let Value::Map(map) = self.value(id) else {
            let found = self.describe(id);
            self.issue(
                id,
                prefix,
                format!("must be a mapping with name and owner, found {found}"),
            );
            return None;
        };
        let before = self.issues.found();
        self.own_name =
            map.iter()
                .find_map(|&(key, value)| match (self.value(key), self.value(value)) {
                    (Value::Text("name"), Value::Text(text)) => Some(text),
                    _ => None,
                });
        let mut name = None;
        let mut seen_name = false;
        let mut values = Map::new();
        let mut seen: Vec<&str> = Vec::new();
        for (key, key_id, value) in self.entries(map, prefix) {
            let field = join(prefix, key);
            if key == "name" {
                seen_name = true;
                name = self.name(value, &field);
                if let Some(name) = &name {
                    declared.push(Declared {
                        name: name.clone(),
                        pos: self.tree.nodes[value].pos,
                        field: field.clone(),
                    });
                }
                continue;
            }
            let Some(declared_field) = file_fields().find(|f| f.name == key) else {
                self.issue(key_id, field, unknown_field(key, &file_keys()));
                continue;
            };
            seen.push(declared_field.name);
            if let Some(read) = self.read(declared_field.rule, declared_field.name, value, &field) {
                values.insert(key.to_owned(), read);
            }
        }
        let required = file_fields()
            .filter(|f| matches!(f.rule, Rule::Text { required: true, .. }))
            .map(|f| (seen.contains(&f.name), f.name));
        for (seen, key) in std::iter::once((seen_name, "name"))
            .chain(required)
            .collect::<Vec<_>>()
        {
            if !seen {
                self.issue(id, join(prefix, key), "missing required field");
            }
        }
        if self.issues.found() != before {
            return None;
        }
        match serde_json::from_value::<Fields>(Json::Object(values)) {
            Ok(fields) => Some(Project {
                name: name?,
                fields,
            }),
            Err(error) => {
                // The rules read each value in the shape its field takes.
                self.issue(id, prefix, format!("cannot be read: {error}"));
                None
            }
        }
    }
}
