//! The picture on a project's page (docs/contract.md#the-project-page): its
//! neighbourhood as an SVG drawn by the server, laid out by `layout-rs`
//! (docs/dependencies.md), at most [`MAX_PICTURE_NODES`] nodes, coloured by
//! lifecycle, a dependency no project has drawn dashed, cycles as they are.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;

use super::svg_canvas::{NodeLook, SvgCanvas};
use crate::registry::read_models::relations::Graph;

/// The most nodes a picture draws; the rest are counted under it.
pub const MAX_PICTURE_NODES: usize = 100;

/// The most edges a picture draws, those of the project itself first: a
/// registry where everything depends on everything still lays out quickly.
pub const MAX_PICTURE_EDGES: usize = 120;

/// Up to this many edges, the layout also reorders ranks to cut crossings.
const OPTIMISED_EDGES: usize = 40;

/// Size of a label's letters in the picture, in pixels.
const LETTERS: usize = 13;
/// The size a box is measured with: `layout-rs` counts a whole letter
/// size per character, wider than the letters drawn.
const MEASURE: usize = 8;

/// A drawn neighbourhood.
#[derive(Debug, Clone)]
pub struct Picture {
    /// The SVG; `None` when the layout failed (the page says so).
    pub svg: Option<String>,
    /// Nodes drawn.
    pub shown: usize,
    /// Nodes of the neighbourhood not drawn.
    pub more: usize,
    /// Whether there may be more still (the neighbourhood was cut while
    /// read).
    pub at_least: bool,
    /// Dependencies drawn between the nodes drawn.
    pub edges: usize,
    /// Dependencies between the nodes drawn left out past
    /// [`MAX_PICTURE_EDGES`] (the page says how many).
    pub edges_more: usize,
}

/// The classes of a node: its lifecycle, and whether it is the root or
/// a name no project has.
fn classes(lifecycle: Option<&str>, root: bool, unknown: bool) -> String {
    let mut classes = match lifecycle {
        Some(lifecycle) => format!("lc-{lifecycle}"),
        None => "lc-none".to_owned(),
    };
    if root {
        classes.push_str(" root");
    }
    if unknown {
        classes.push_str(" unknown");
    }
    classes
}

/// Draws `graph`, whose first node is the project of the page.
pub fn draw(graph: &Graph) -> Picture {
    let shown = graph.nodes.len().min(MAX_PICTURE_NODES);
    let nodes = &graph.nodes[..shown];
    let orientation = Orientation::TopToBottom;
    let look = StyleAttr::new(Color::fast("black"), 1, None, 6, LETTERS);
    let mut visual = VisualGraph::new(orientation);
    let mut handles = HashMap::new();
    let mut looks = Vec::with_capacity(shown);
    for (i, node) in nodes.iter().enumerate() {
        let lifecycle = node.entry.as_ref().and_then(|e| e.lifecycle.as_deref());
        looks.push(NodeLook {
            name: node.name.clone(),
            classes: classes(lifecycle, i == 0, node.entry.is_none()),
        });
        let shape = ShapeKind::new_box(&node.name);
        let size = get_shape_size(orientation, &shape, MEASURE, false);
        let element =
            Element::create_with_properties(shape, look.clone(), orientation, size, i.to_string());
        handles.insert(node.name.as_str(), (visual.add_node(element), node));
    }
    let root = nodes.first().map(|n| n.name.as_str()).unwrap_or_default();
    let mut edges: Vec<&(String, String)> = graph
        .edges
        .iter()
        .filter(|(from, to)| {
            handles.contains_key(from.as_str()) && handles.contains_key(to.as_str())
        })
        .collect();
    edges.sort_by_key(|(from, to)| from != root && to != root);
    let among = edges.len();
    edges.truncate(MAX_PICTURE_EDGES);
    let drawn_edges = edges.len();
    let many = drawn_edges > OPTIMISED_EDGES;
    for (from, to) in edges {
        let (Some((from, _)), Some((to, target))) =
            (handles.get(from.as_str()), handles.get(to.as_str()))
        else {
            continue;
        };
        let style = if target.entry.is_none() {
            LineStyleKind::Dashed
        } else {
            LineStyleKind::Normal
        };
        let arrow = Arrow::new(
            LineEndKind::None,
            LineEndKind::Arrow,
            style,
            "",
            &look,
            &None,
            &None,
        );
        visual.add_edge(arrow, *from, *to);
    }
    let mut canvas = SvgCanvas::new(looks);
    // The layout asserts what it expects of its input; a failure there
    // costs the picture, never the page.
    let laid = catch_unwind(AssertUnwindSafe(|| {
        // Past a few dozen edges the crossing optimisation costs seconds.
        visual.do_it(false, many, false, &mut canvas);
    }));
    let title = format!("{root} and its neighbourhood");
    Picture {
        svg: laid.ok().map(|()| canvas.finish(&title)),
        shown,
        more: graph.nodes.len() - shown,
        at_least: !graph.complete,
        edges: drawn_edges,
        edges_more: among - drawn_edges,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::read_models::relations::{Node, NodeEntry};

    fn node(name: &str, lifecycle: Option<&str>, depends_on: &[&str]) -> Node {
        Node {
            name: name.to_owned(),
            entry: Some(NodeEntry {
                owner: "team".to_owned(),
                resolved: Default::default(),
                system: None,
                lifecycle: lifecycle.map(str::to_owned),
                repo: "acme/x".to_owned(),
                path: "project.yaml".to_owned(),
                depends_on: depends_on.iter().map(|s| (*s).to_owned()).collect(),
            }),
            distance: 0,
        }
    }

    fn graph(nodes: Vec<Node>) -> Graph {
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let mut edges = Vec::new();
        for n in &nodes {
            for to in n.entry.iter().flat_map(|e| &e.depends_on) {
                if names.contains(to) {
                    edges.push((n.name.clone(), to.clone()));
                }
            }
        }
        Graph {
            nodes,
            edges,
            complete: true,
        }
    }

    #[test]
    fn a_cycle_and_an_unknown_name_should_be_drawn() {
        let mut nodes = vec![
            node("cart-api", Some("production"), &["pay", "ghost"]),
            node("pay", Some("deprecated"), &["cart-api"]),
        ];
        nodes.push(Node {
            name: "ghost".to_owned(),
            entry: None,
            distance: 1,
        });
        let picture = draw(&graph(nodes));
        let svg = picture.svg.unwrap_or_default();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("class=\"node lc-production root\""), "{svg}");
        assert!(svg.contains("class=\"node lc-deprecated\""), "{svg}");
        assert!(svg.contains("class=\"node lc-none unknown\""), "{svg}");
        assert!(svg.contains("class=\"edge unknown\""), "dashed: {svg}");
        assert_eq!(svg.matches("<path class=\"edge").count(), 3, "{svg}");
        assert!(!svg.contains("<style") && !svg.contains("style="), "{svg}");
        assert_eq!((picture.shown, picture.more), (3, 0));
        assert_eq!((picture.edges, picture.edges_more), (3, 0));
    }

    #[test]
    fn at_most_the_bound_of_edges_should_be_drawn_and_the_rest_counted() {
        // 30 projects, each depending on every other: 870 edges.
        let names: Vec<String> = (0..30).map(|i| format!("svc-{i:02}")).collect();
        let nodes = names
            .iter()
            .map(|n| {
                let others: Vec<&str> = names
                    .iter()
                    .filter(|o| *o != n)
                    .map(String::as_str)
                    .collect();
                node(n, None, &others)
            })
            .collect();
        let picture = draw(&graph(nodes));
        assert_eq!(
            (picture.edges, picture.edges_more),
            (MAX_PICTURE_EDGES, 870 - MAX_PICTURE_EDGES)
        );
        let svg = picture.svg.unwrap_or_default();
        assert_eq!(svg.matches("<path class=\"edge").count(), MAX_PICTURE_EDGES);
    }

    #[test]
    fn at_most_a_hundred_nodes_should_be_drawn_and_the_rest_counted() {
        let mut nodes = vec![node("hub", None, &[])];
        for i in 0..150 {
            nodes.push(node(&format!("user-{i:03}"), None, &["hub"]));
        }
        let picture = draw(&graph(nodes));
        assert_eq!((picture.shown, picture.more), (MAX_PICTURE_NODES, 51));
        let svg = picture.svg.unwrap_or_default();
        assert_eq!(svg.matches("data-node=").count(), MAX_PICTURE_NODES);
    }
}
