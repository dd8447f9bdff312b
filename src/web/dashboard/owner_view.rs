//! How the pages show an entry's owner and tags: the owner as the file
//! names it, or a renamed team's current slug with "renamed from", and a
//! note when it names nobody now.

use crate::project::{OwnerStatus, ResolvedOwner};
use crate::web::html_budget::escaped_len;
use crate::web::view::href_with;

/// An entry's owner on a page.
pub(crate) struct OwnerView {
    /// What the page shows: the file's text, or a renamed team's slug now.
    pub shown: String,
    /// The projects of that owner (as the file names it).
    pub href: String,
    /// `renamed from payments`, `deleted team`, `names nobody`.
    pub note: Option<String>,
    /// The `owner_status` word, for the page's style.
    pub status: &'static str,
}

impl OwnerView {
    pub fn new(owner: &str, resolved: &ResolvedOwner) -> Self {
        let href = href_with("/projects", &[("owner", Some(owner))]);
        let (shown, note) = match (resolved.owner_status, &resolved.owner_slug) {
            (OwnerStatus::Renamed, Some(slug)) => {
                (slug.clone(), Some(format!("renamed from {owner}")))
            }
            (OwnerStatus::Deleted, _) => (owner.to_owned(), Some("deleted team".to_owned())),
            (OwnerStatus::Unknown, _) => (owner.to_owned(), Some("names nobody".to_owned())),
            (OwnerStatus::Hidden, _) => ("hidden".to_owned(), Some("sign in to see it".to_owned())),
            _ => (owner.to_owned(), None),
        };
        Self {
            shown,
            href,
            note,
            status: resolved.owner_status.as_str(),
        }
    }

    /// Bytes of its values once escaped.
    pub fn html_len(&self) -> usize {
        escaped_len(&self.shown)
            + escaped_len(&self.href)
            + self.note.as_deref().map_or(0, escaped_len)
            + 64
    }
}

/// Each tag with the link to its projects.
pub(crate) fn tag_links(tags: &[String]) -> Vec<(String, String)> {
    tags.iter()
        .map(|tag| (href_with("/projects", &[("tag", Some(tag))]), tag.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_team_should_show_its_slug_now_and_where_it_came_from() {
        let resolved = ResolvedOwner {
            owner_status: OwnerStatus::Renamed,
            owner_team_id: Some(7),
            owner_slug: Some("payments-core".to_owned()),
        };
        let view = OwnerView::new("payments", &resolved);
        assert_eq!(view.shown, "payments-core");
        assert_eq!(view.note.as_deref(), Some("renamed from payments"));
        assert_eq!(view.href, "/projects?owner=payments");
        let plain = OwnerView::new("payments", &ResolvedOwner::default());
        assert_eq!((plain.shown.as_str(), plain.note), ("payments", None));
    }
}
