//! Where `layout-rs` draws a project's neighbourhood: an SVG canvas that
//! writes no inline style (the crate's own writer adds a `<style>` element,
//! which the pages' Content-Security-Policy refuses). Colours and dashes
//! come from classes that `/static/roster.css` styles; the rest is
//! presentation attributes. Each node is a link to its project's page.

use std::fmt::Write;

use layout::core::format::{ClipHandle, RenderBackend};
use layout::core::geometry::Point;
use layout::core::style::StyleAttr;

use crate::web::view::path_segment;

/// What a node of the picture is, found by the index its element carries
/// as its properties.
#[derive(Debug, Clone)]
pub struct NodeLook {
    pub name: String,
    /// Classes of its group: lifecycle, root, unknown.
    pub classes: String,
}

/// Collects what `layout-rs` draws, then writes the SVG.
pub struct SvgCanvas {
    looks: Vec<NodeLook>,
    nodes: String,
    edges: String,
    /// A node's group left open for its label.
    open: bool,
    width: f64,
    height: f64,
}

/// The escaped text of a name or class (names are checked on the way
/// in; this keeps the SVG well formed whatever they hold).
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

impl SvgCanvas {
    pub fn new(looks: Vec<NodeLook>) -> Self {
        Self {
            looks,
            nodes: String::new(),
            edges: String::new(),
            open: false,
            width: 0.0,
            height: 0.0,
        }
    }

    fn grow(&mut self, at: Point) {
        self.width = self.width.max(at.x + 5.0);
        self.height = self.height.max(at.y + 5.0);
    }

    fn close(&mut self) {
        if self.open {
            self.nodes.push_str("</a>\n");
            self.open = false;
        }
    }

    /// The picture, labelled for readers of assistive technology.
    pub fn finish(mut self, title: &str) -> String {
        self.close();
        let (w, h) = (self.width.ceil(), self.height.ceil());
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" role=\"img\" \
             viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" aria-label=\"{title}\">\n\
             <title>{title}</title>\n\
             <defs><marker id=\"arrow-head\" markerWidth=\"10\" markerHeight=\"7\" refX=\"10\" \
             refY=\"3.5\" orient=\"auto-start-reverse\"><polygon class=\"arrow-head\" \
             points=\"0 0, 10 3.5, 0 7\"/></marker></defs>\n\
             <g class=\"edges\">\n{}</g>\n<g class=\"nodes\">\n{}</g>\n</svg>",
            self.edges,
            self.nodes,
            title = escaped(title),
        )
    }
}

impl RenderBackend for SvgCanvas {
    fn draw_rect(
        &mut self,
        xy: Point,
        size: Point,
        _look: &StyleAttr,
        properties: Option<String>,
        _clip: Option<ClipHandle>,
    ) {
        self.close();
        self.grow(Point::new(xy.x + size.x, xy.y + size.y));
        let look = properties
            .and_then(|p| p.parse::<usize>().ok())
            .and_then(|i| self.looks.get(i))
            .cloned();
        let Some(look) = look else {
            return;
        };
        let _ = write!(
            self.nodes,
            "<a href=\"/projects/{}\" class=\"node {}\" data-node=\"{}\">\
             <rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"6\"/>",
            escaped(&path_segment(&look.name)),
            escaped(&look.classes),
            escaped(&look.name),
            xy.x,
            xy.y,
            size.x,
            size.y,
        );
        self.open = true;
    }

    fn draw_line(&mut self, start: Point, stop: Point, _: &StyleAttr, _: Option<String>) {
        self.grow(start);
        self.grow(stop);
        let _ = writeln!(
            self.edges,
            "<line class=\"edge\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
            start.x, start.y, stop.x, stop.y
        );
    }

    fn draw_circle(&mut self, xy: Point, size: Point, _: &StyleAttr, _: Option<String>) {
        // The picture draws boxes only; a circle is a debugging aid.
        self.grow(Point::new(xy.x + size.x / 2.0, xy.y + size.y / 2.0));
    }

    fn draw_text(&mut self, xy: Point, text: &str, look: &StyleAttr) {
        let _ = write!(
            self.nodes,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
             dominant-baseline=\"central\" font-size=\"{}\">{}</text>",
            xy.x,
            xy.y,
            look.font_size,
            escaped(text)
        );
        self.close();
    }

    fn draw_arrow(
        &mut self,
        path: &[(Point, Point)],
        dashed: bool,
        head: (bool, bool),
        _look: &StyleAttr,
        _properties: Option<String>,
        _text: &str,
    ) {
        let (Some(first), Some(second)) = (path.first(), path.get(1)) else {
            return;
        };
        for (a, b) in path {
            self.grow(*a);
            self.grow(*b);
        }
        let mut d = format!(
            "M {:.1} {:.1} C {:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
            first.0.x,
            first.0.y,
            first.1.x,
            first.1.y,
            second.0.x,
            second.0.y,
            second.1.x,
            second.1.y
        );
        for (a, b) in path.iter().skip(2) {
            let _ = write!(d, " S {:.1} {:.1}, {:.1} {:.1}", a.x, a.y, b.x, b.y);
        }
        let class = if dashed { "edge unknown" } else { "edge" };
        let mark = |on: bool, at: &str| {
            if on {
                format!(" marker-{at}=\"url(#arrow-head)\"")
            } else {
                String::new()
            }
        };
        let (start, end) = (mark(head.0, "start"), mark(head.1, "end"));
        let _ = writeln!(
            self.edges,
            "<path class=\"{class}\" d=\"{d}\"{start}{end}/>"
        );
    }

    fn create_clip(&mut self, _: Point, _: Point, _: usize) -> ClipHandle {
        0
    }
}
