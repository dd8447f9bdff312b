//! A YAML document as a small tree of nodes that remember where they were
//! written, so that every rule can point at the offending line and column.
//!
//! The tree is built from the events of a streaming parser, without
//! recursion, and refuses two kinds of hostile input early: nesting deeper
//! than [`MAX_DEPTH`] and aliases that would expand the document past
//! [`super::MAX_FILE_BYTES`]. Aliases are not copied: an alias node points to
//! the node it names, and the expanded size is tracked as a number instead.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use super::MAX_FILE_BYTES;

/// Deepest nesting of lists and mappings accepted; a project file needs 5.
pub(crate) const MAX_DEPTH: usize = 64;

/// A 1-based line and column (the column counts characters, like editors do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn of(span: &Span) -> Pos {
        Pos {
            line: span.start.line(),
            column: span.start.col() + 1,
        }
    }
}

/// Index of a node in [`Tree::nodes`].
pub(crate) type NodeId = usize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `plain` is false for quoted and block scalars, which are never null.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<NodeId>),
    Map(Vec<(NodeId, NodeId)>),
    /// Points to the anchored node; never to another alias.
    Alias(NodeId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub pos: Pos,
    pub kind: Kind,
}

/// One YAML document; `root` is `None` for an empty stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    pub root: Option<NodeId>,
}

impl Tree {
    /// The node itself, or the node an alias stands for.
    pub fn get(&self, id: NodeId) -> &Node {
        let node = &self.nodes[id];
        match node.kind {
            Kind::Alias(target) => &self.nodes[target],
            _ => node,
        }
    }
}

/// Why the text is not a usable YAML document; always reported as `yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadError {
    pub pos: Pos,
    pub message: String,
}

impl LoadError {
    fn at(span: &Span, message: impl Into<String>) -> LoadError {
        LoadError {
            pos: Pos::of(span),
            message: message.into(),
        }
    }
}

impl From<ScanError> for LoadError {
    fn from(error: ScanError) -> LoadError {
        LoadError {
            pos: Pos {
                line: error.marker().line(),
                column: error.marker().col() + 1,
            },
            message: match error.info() {
                "recursion limit exceeded" => {
                    "nesting is too deep (recursion limit exceeded)".into()
                }
                info => info.to_owned(),
            },
        }
    }
}

/// A collection whose end event has not come yet.
struct Open {
    id: NodeId,
    items: Vec<NodeId>,
    is_map: bool,
}

/// Builds the tree event by event.
#[derive(Default)]
struct Builder {
    nodes: Vec<Node>,
    /// Expanded size of each finished node (`None` while it is still open).
    sizes: Vec<Option<usize>>,
    /// Expanded size of the whole document so far.
    total: usize,
    stack: Vec<Open>,
    anchors: HashMap<usize, NodeId>,
    root: Option<NodeId>,
}

impl Builder {
    fn push_node(&mut self, pos: Pos, kind: Kind, size: Option<usize>, anchor: usize) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(Node { pos, kind });
        self.sizes.push(size);
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        id
    }

    /// Counts `size` more units of expanded document, failing past the limit.
    fn grow(&mut self, size: usize, span: &Span, what: &str) -> Result<(), LoadError> {
        self.total = self.total.saturating_add(size);
        if self.total > MAX_FILE_BYTES {
            return Err(LoadError::at(
                span,
                format!(
                    "{what} expands the document past the limit of {MAX_FILE_BYTES} bytes (256 KiB)"
                ),
            ));
        }
        Ok(())
    }

    fn attach(&mut self, id: NodeId, span: &Span) -> Result<(), LoadError> {
        match self.stack.last_mut() {
            Some(open) => open.items.push(id),
            None if self.root.is_none() => self.root = Some(id),
            None => return Err(LoadError::at(span, "more than one value at the top level")),
        }
        Ok(())
    }

    fn open(&mut self, span: &Span, anchor: usize, is_map: bool) -> Result<(), LoadError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(LoadError::at(
                span,
                format!("nesting is too deep (more than {MAX_DEPTH} levels)"),
            ));
        }
        self.grow(1, span, "this value")?;
        let id = self.push_node(Pos::of(span), Kind::Seq(Vec::new()), None, anchor);
        self.stack.push(Open {
            id,
            items: Vec::new(),
            is_map,
        });
        Ok(())
    }

    fn close(&mut self, span: &Span) -> Result<(), LoadError> {
        let Some(open) = self.stack.pop() else {
            return Err(LoadError::at(span, "unexpected end of a collection"));
        };
        let size = open.items.iter().fold(1usize, |sum, item| {
            sum.saturating_add(self.sizes[*item].unwrap_or(0))
        });
        self.sizes[open.id] = Some(size);
        self.nodes[open.id].kind = if open.is_map {
            let mut entries = Vec::with_capacity(open.items.len() / 2);
            let mut items = open.items.into_iter();
            while let (Some(key), Some(value)) = (items.next(), items.next()) {
                entries.push((key, value));
            }
            Kind::Map(entries)
        } else {
            Kind::Seq(open.items)
        };
        self.attach(open.id, span)
    }

    fn scalar(
        &mut self,
        span: &Span,
        text: String,
        style: ScalarStyle,
        anchor: usize,
    ) -> Result<(), LoadError> {
        let size = text.chars().count().saturating_add(1);
        self.grow(size, span, "this value")?;
        let plain = matches!(style, ScalarStyle::Plain);
        let id = self.push_node(
            Pos::of(span),
            Kind::Scalar { text, plain },
            Some(size),
            anchor,
        );
        self.attach(id, span)
    }

    fn alias(&mut self, span: &Span, anchor: usize) -> Result<(), LoadError> {
        let Some(&target) = self.anchors.get(&anchor) else {
            return Err(LoadError::at(span, "alias to an unknown anchor"));
        };
        let Some(size) = self.sizes[target] else {
            return Err(LoadError::at(
                span,
                "alias refers to a value that contains it",
            ));
        };
        self.grow(size, span, "this alias")?;
        let id = self.push_node(Pos::of(span), Kind::Alias(target), Some(size), 0);
        self.attach(id, span)
    }
}

impl Builder {
    /// The parser's error in plain words where a likelier cause is known: a
    /// `[` or `{` opened on an earlier line and never closed makes the
    /// parser stumble on some later line, so the error points at the
    /// bracket instead.
    fn explain(&self, text: &str, error: ScanError) -> LoadError {
        let error = LoadError::from(error);
        let unclosed = self.stack.iter().rev().find_map(|open| {
            let pos = self.nodes[open.id].pos;
            let opener = text
                .lines()
                .nth(pos.line.checked_sub(1)?)?
                .chars()
                .nth(pos.column.checked_sub(1)?)?;
            (pos.line < error.pos.line).then_some((pos, opener))
        });
        match unclosed {
            Some((pos, '[')) => LoadError {
                pos,
                message: "this `[` is never closed: a list in brackets ends with `]`".into(),
            },
            Some((pos, '{')) => LoadError {
                pos,
                message: "this `{` is never closed: a mapping in braces ends with `}`".into(),
            },
            _ => error,
        }
    }
}

/// Parses `text` into a tree, stopping at the first syntax error or limit.
pub(crate) fn load(text: &str) -> Result<Tree, LoadError> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder::default();
    let mut documents = 0usize;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|error| builder.explain(text, error))?;
        match event {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(LoadError::at(
                        &span,
                        "more than one YAML document (a project file holds one)",
                    ));
                }
            }
            Event::Scalar(text, style, anchor, _tag) => {
                builder.scalar(&span, text.into_owned(), style, anchor)?;
            }
            Event::Alias(anchor) => builder.alias(&span, anchor)?,
            Event::SequenceStart(anchor, _tag) => builder.open(&span, anchor, false)?,
            Event::MappingStart(anchor, _tag) => builder.open(&span, anchor, true)?,
            Event::SequenceEnd | Event::MappingEnd => builder.close(&span)?,
        }
    }
    Ok(Tree {
        nodes: builder.nodes,
        root: builder.root,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(tree: &Tree, id: NodeId) -> (&str, Pos) {
        let node = tree.get(id);
        match &node.kind {
            Kind::Scalar { text, .. } => (text, node.pos),
            other => panic!("not a scalar: {other:?}"),
        }
    }

    #[test]
    fn load_should_give_every_node_its_line_and_column() {
        let tree = load("name: a\nlinks:\n  - url: \"x\"\n").unwrap();
        let root = tree.root.unwrap();
        let Kind::Map(entries) = &tree.get(root).kind else {
            panic!("root is not a mapping")
        };
        assert_eq!(
            scalar(&tree, entries[0].0),
            ("name", Pos { line: 1, column: 1 })
        );
        assert_eq!(
            scalar(&tree, entries[0].1),
            ("a", Pos { line: 1, column: 7 })
        );
        let links = tree.get(entries[1].1);
        assert_eq!(links.pos, Pos { line: 3, column: 3 });
        let Kind::Seq(items) = &links.kind else {
            panic!("links is not a list")
        };
        let Kind::Map(link) = &tree.get(items[0]).kind else {
            panic!("link is not a mapping")
        };
        assert_eq!(
            scalar(&tree, link[0].1),
            (
                "x",
                Pos {
                    line: 3,
                    column: 10
                }
            )
        );
    }

    #[test]
    fn load_should_resolve_an_alias_to_its_anchor() {
        let tree = load("a: &x hello\nb: *x\n").unwrap();
        let Kind::Map(entries) = &tree.get(tree.root.unwrap()).kind else {
            panic!("root is not a mapping")
        };
        assert_eq!(scalar(&tree, entries[1].1).0, "hello");
    }

    #[test]
    fn load_should_point_at_a_bracket_left_open_on_an_earlier_line() {
        let error = load("name: a\nowner: b\ntags: [x, y\ndescription: hi\n").unwrap_err();
        assert_eq!(error.pos, Pos { line: 3, column: 7 });
        assert_eq!(
            error.message,
            "this `[` is never closed: a list in brackets ends with `]`"
        );
        let error = load("name: a\nlabels: {team: x\nowner: b\n").unwrap_err();
        assert_eq!(error.pos, Pos { line: 2, column: 9 });
        assert!(
            error.message.starts_with("this `{` is never closed"),
            "{error:?}"
        );
    }

    #[test]
    fn load_should_keep_the_parser_error_when_no_bracket_is_left_open() {
        let error = load("name: a\nowner: b: c\n").unwrap_err();
        assert_eq!(error.pos.line, 2);
        assert!(!error.message.contains("never closed"), "{error:?}");
    }

    #[test]
    fn load_should_give_no_root_for_an_empty_stream() {
        assert_eq!(load("# only a comment\n").unwrap().root, None);
    }

    #[test]
    fn load_should_refuse_an_alias_inside_its_own_anchor() {
        let error = load("a: &x [1, *x]\n").unwrap_err();
        assert_eq!(error.message, "alias refers to a value that contains it");
        assert_eq!(
            error.pos,
            Pos {
                line: 1,
                column: 11
            }
        );
    }
}
