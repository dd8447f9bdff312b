//! What every page shows around its content: who is signed in, and a
//! one-line notice after a form was sent.

use serde::Deserialize;

use crate::web::session::Viewer;

/// The page's frame: the header's sign-in state and an optional notice.
/// The default (error pages, which do not know the viewer) shows neither.
#[derive(Debug, Clone, Default)]
pub struct Chrome {
    pub viewer: Viewer,
    /// Whether the header shows the sign-in state at all.
    pub show_viewer: bool,
    /// A fixed text chosen by the server, never echoed from the request.
    pub notice: Option<&'static str>,
}

impl Chrome {
    /// The frame of a page after a form's redirect (`?done=`).
    pub fn new(viewer: Viewer, done: &DoneParam) -> Self {
        Self {
            notice: done.notice(),
            ..Self::for_viewer(viewer)
        }
    }

    pub fn for_viewer(viewer: Viewer) -> Self {
        Self {
            viewer,
            show_viewer: true,
            notice: None,
        }
    }
}

/// `?done=` after a form's redirect, naming what the form did.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct DoneParam {
    pub done: Option<String>,
}

impl DoneParam {
    fn notice(&self) -> Option<&'static str> {
        match self.done.as_deref()? {
            "resync" => Some("Resync queued: a worker reads this repository again shortly."),
            "resync-all" => {
                Some("Org-wide listing requested: every repository is checked again shortly.")
            }
            "signed-in" => Some("Signed in. Resync buttons are available for 12 hours."),
            "signed-out" => Some("Signed out. The dashboard is read-only."),
            _ => None,
        }
    }
}
