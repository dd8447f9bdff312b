//! Where each project's `name`, `owner` and dependencies sit in a valid file, so that a
//! problem the file's own rules cannot see (a name another repository
//! owns, an owner that names nobody) can still be shown at its line and
//! column.

use super::tree::{self, Kind, NodeId, Tree};

/// A declared value (a name, an owner) with its field path (`name`,
/// `projects[2].owner`) and its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePosition {
    pub name: String,
    pub field: String,
    pub line: usize,
    pub column: usize,
}

/// The position of every `name` in `text`, in document order; empty when
/// the text is not a YAML document (the rules report that themselves).
pub fn name_positions(text: &str) -> Vec<NamePosition> {
    positions_of(text, "name")
}

/// The position of every `owner` in `text`, in document order (`name`
/// holds the owner's text); empty when the text is not a YAML document.
pub fn owner_positions(text: &str) -> Vec<NamePosition> {
    positions_of(text, "owner")
}

/// The position of every item of every `depends_on` in `text`, in document
/// order (`depends_on[1]`, `projects[0].depends_on[2]`; `name` holds the
/// item's text); empty when the text is not a YAML document.
pub fn dependency_positions(text: &str) -> Vec<NamePosition> {
    let mut found = Vec::new();
    each_value(text, "depends_on", |tree, id, field| {
        if let Kind::Seq(items) = &tree.get(id).kind {
            for (i, item) in items.iter().enumerate() {
                push(tree, &mut found, *item, format!("{field}[{i}]"));
            }
        }
    });
    found
}

fn positions_of(text: &str, key: &str) -> Vec<NamePosition> {
    let mut found = Vec::new();
    each_value(text, key, |tree, id, field| {
        push(tree, &mut found, id, field)
    });
    found
}

/// Calls `found` with the value of `key` of the one project, or of each
/// item of `projects`, and its field path.
fn each_value(text: &str, key: &str, mut found: impl FnMut(&Tree, NodeId, String)) {
    let loaded = std::panic::catch_unwind(|| tree::load(text));
    let Ok(Ok(tree)) = loaded else {
        return;
    };
    let Some(root) = tree.root else {
        return;
    };
    if let Some(value) = value_of(&tree, root, key) {
        found(&tree, value, key.to_owned());
    }
    if let Some(projects) = value_of(&tree, root, "projects") {
        if let Kind::Seq(items) = &tree.get(projects).kind {
            for (k, item) in items.iter().enumerate() {
                if let Some(value) = value_of(&tree, *item, key) {
                    found(&tree, value, format!("projects[{k}].{key}"));
                }
            }
        }
    }
}

fn value_of(tree: &Tree, map: NodeId, key: &str) -> Option<NodeId> {
    let Kind::Map(entries) = &tree.get(map).kind else {
        return None;
    };
    entries.iter().find_map(|(k, v)| match &tree.get(*k).kind {
        Kind::Scalar { text, .. } if text == key => Some(*v),
        _ => None,
    })
}

fn push(tree: &Tree, found: &mut Vec<NamePosition>, id: NodeId, field: String) {
    let node = tree.get(id);
    if let Kind::Scalar { text, .. } = &node.kind {
        found.push(NamePosition {
            name: text.clone(),
            field,
            line: node.pos.line,
            column: node.pos.column,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_should_be_found_in_both_shapes() {
        let one = name_positions("owner: a\nname: checkout-api\n");
        assert_eq!(
            one,
            vec![NamePosition {
                name: "checkout-api".into(),
                field: "name".into(),
                line: 2,
                column: 7
            }]
        );
        let many =
            name_positions("projects:\n  - name: a\n    owner: x\n  - owner: y\n    name: b\n");
        let fields: Vec<(&str, &str, usize, usize)> = many
            .iter()
            .map(|p| (p.name.as_str(), p.field.as_str(), p.line, p.column))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("a", "projects[0].name", 2, 11),
                ("b", "projects[1].name", 5, 11)
            ]
        );
        assert!(name_positions("name: [").is_empty());
    }

    #[test]
    fn each_dependency_should_be_found_in_both_shapes() {
        let one = dependency_positions("name: a\ndepends_on:\n  - b\n  - c\n");
        let fields: Vec<(&str, &str, usize, usize)> = one
            .iter()
            .map(|p| (p.name.as_str(), p.field.as_str(), p.line, p.column))
            .collect();
        assert_eq!(
            fields,
            vec![("b", "depends_on[0]", 3, 5), ("c", "depends_on[1]", 4, 5)]
        );
        let many =
            dependency_positions("projects:\n  - name: a\n  - name: b\n    depends_on: [a]\n");
        assert_eq!(
            (many[0].field.as_str(), many[0].line, many[0].column),
            ("projects[1].depends_on[0]", 4, 18)
        );
        assert!(dependency_positions("depends_on: b\n").is_empty());
    }

    #[test]
    fn owners_should_be_found_in_both_shapes() {
        let one = owner_positions("name: a\nowner: payments\n");
        assert_eq!(
            (
                one[0].name.as_str(),
                one[0].field.as_str(),
                one[0].line,
                one[0].column
            ),
            ("payments", "owner", 2, 8)
        );
        let many = owner_positions("projects:\n  - name: a\n    owner: x\n  - name: b\n");
        assert_eq!(many.len(), 1);
        assert_eq!(
            (many[0].field.as_str(), many[0].line, many[0].column),
            ("projects[0].owner", 3, 12)
        );
    }
}
