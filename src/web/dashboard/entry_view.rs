//! An entry's facts as the pages show them (a repository's page and a
//! project's page): every field of the file, its owner as resolved, where
//! it comes from and when it changed. `templates/entry_facts.html` lays
//! them out.

use chrono::{DateTime, Utc};

use super::owner_view::{tag_links, OwnerView};
use crate::project::Fields;
use crate::registry::Entry;
use crate::web::view::{commit_link, http_url, project_file_link, short_sha, TimeView};

/// One entry, ready for `templates/entry_facts.html`.
pub(super) struct EntryView {
    pub(super) name: String,
    /// The file's fields (the table in `src/project/fields.rs`), shown as
    /// they are; the template picks how each reads.
    pub(super) fields: Fields,
    pub(super) owner: OwnerView,
    pub(super) tags: Vec<(String, String)>,
    pub(super) links: Vec<LinkView>,
    pub(super) labels: Vec<(String, String)>,
    /// Its dependencies, each marked when no project has that name (what
    /// the overview's "to fix" counts).
    pub(super) depends_on: Vec<DependencyMark>,
    /// The project file that declares it, and where to see it.
    pub(super) path: String,
    pub(super) path_href: Option<String>,
    pub(super) source_sha: String,
    pub(super) source_sha_href: Option<String>,
    pub(super) created: TimeView,
    pub(super) updated: TimeView,
}

/// One dependency of an entry, and whether a project has that name.
pub(super) struct DependencyMark {
    pub(super) name: String,
    pub(super) unknown: bool,
}

/// A link of an entry; `href` is set only for http(s) URLs, the others are
/// shown as plain text.
pub(super) struct LinkView {
    pub(super) title: String,
    pub(super) url: String,
    pub(super) href: Option<String>,
}

impl EntryView {
    /// `entry`, linking to its file and commit on `web` (GitHub's site,
    /// `None` for a local folder) at `branch`; `resolves` tells which
    /// dependency names are projects.
    pub(super) fn new(
        entry: Entry,
        web: Option<&str>,
        branch: Option<&str>,
        now: DateTime<Utc>,
        resolves: impl Fn(&str) -> bool,
    ) -> Self {
        Self {
            depends_on: entry
                .fields
                .depends_on
                .iter()
                .map(|name| DependencyMark {
                    unknown: !resolves(name),
                    name: name.clone(),
                })
                .collect(),
            owner: OwnerView::new(&entry.fields.owner, &entry.resolved),
            path_href: project_file_link(web, &entry.repo, branch, &entry.path),
            path: entry.path.clone(),
            source_sha: short_sha(Some(&entry.source_sha)),
            source_sha_href: commit_link(web, &entry.repo, &entry.source_sha),
            name: entry.name,
            tags: tag_links(&entry.fields.tags),
            links: entry
                .fields
                .links
                .iter()
                .map(|link| LinkView {
                    href: http_url(&link.url),
                    title: link.title.clone(),
                    url: link.url.clone(),
                })
                .collect(),
            labels: entry.fields.labels.clone().into_iter().collect(),
            fields: entry.fields,
            created: TimeView::new(entry.created_at, now),
            updated: TimeView::new(entry.updated_at, now),
        }
    }
}
