//! The export's body, written as it is read: a page of entries at a time
//! (`registry::read_models::export`), so an export of any size holds one page in memory.
//!
//! The comment at the top counts what is left out, and a system's owner
//! depends on all its components, so the registry is read twice: a first
//! pass keeps only counts (the components Backstage would refuse, each
//! system's owners), the second writes each page of components as it reads
//! it, then the systems.
//!
//! Each document is written in YAML's JSON form (YAML 1.2 reads JSON as it
//! is, Backstage's reader among them), so its text is escaped by
//! `serde_json` rather than by hand.

use axum::body::{Body, Bytes};
use futures_util::stream;
use serde::Serialize;
use sqlx::PgPool;

use super::entity::{self, Refused, Systems};
use crate::registry::read_models::export::{export_page, ExportEntry};
use crate::registry::RegistryError;
use crate::web::privacy::Privacy;

/// What a first pass over the registry found.
#[derive(Debug, Default)]
pub struct Tally {
    pub components: usize,
    pub refused_by_name: usize,
    pub refused_by_owner: usize,
    pub tags_left_out: usize,
    pub systems: Systems,
}

impl Tally {
    fn count(&mut self, row: &ExportEntry) {
        match entity::component(row) {
            Ok(component) => {
                self.components += 1;
                self.tags_left_out += component.tags_left_out;
                if let Some(system) = component.system {
                    self.systems.add(system, component.document.owner());
                }
            }
            Err(Refused::Name) => self.refused_by_name += 1,
            Err(Refused::Owner) => self.refused_by_owner += 1,
        }
    }

    /// The comment at the top of the export.
    fn header(&self) -> String {
        format!(
            "# Roster's registry as Backstage catalog entities: {} components, {} systems.\n\
             # Left out, as Backstage would refuse a name: {} components \
             ({} by their name, {} by their owner's), {} tags.\n",
            self.components,
            self.systems.count(),
            self.refused_by_name + self.refused_by_owner,
            self.refused_by_name,
            self.refused_by_owner,
            self.tags_left_out,
        )
    }
}

/// A page of the registry as the reader may see it (an owner it may not
/// see reads `hidden`: such a component is left out, counted by its
/// owner's name).
async fn page_seen(
    pool: &PgPool,
    privacy: &Privacy,
    after: Option<&str>,
) -> Result<Vec<ExportEntry>, RegistryError> {
    let mut page = export_page(pool, after).await?;
    for row in &mut page {
        row.entry = privacy.entry(row.entry.clone());
    }
    Ok(page)
}

/// Reads the whole registry once, keeping only counts.
pub async fn tally(pool: &PgPool, privacy: &Privacy) -> Result<Tally, RegistryError> {
    let mut tally = Tally::default();
    let mut after: Option<String> = None;
    loop {
        let page = page_seen(pool, privacy, after.as_deref()).await?;
        let Some(last) = page.last() else {
            return Ok(tally);
        };
        after = Some(last.entry.name.clone());
        page.iter().for_each(|row| tally.count(row));
    }
}

/// Where the writing stands.
enum Step {
    /// The first pass, then the comment.
    Start,
    /// The components after this name (from the first when `None`).
    Components(Option<String>, Systems),
    Done,
}

/// The export of the registry that `pool` holds, as a streamed body. A
/// read that fails midway ends the body with an error, so the client sees
/// a broken transfer, never a shorter catalog.
pub fn body(pool: PgPool, privacy: Privacy) -> Body {
    let chunks = stream::unfold(Step::Start, move |step| {
        let pool = pool.clone();
        let privacy = privacy.clone();
        async move { next(&pool, &privacy, step).await }
    });
    Body::from_stream(chunks)
}

type Chunk = Result<Bytes, RegistryError>;

async fn next(pool: &PgPool, privacy: &Privacy, step: Step) -> Option<(Chunk, Step)> {
    let (chunk, step) = match step {
        Step::Start => match tally(pool, privacy).await {
            Ok(tally) => (
                Ok(tally.header().into_bytes()),
                Step::Components(None, tally.systems),
            ),
            Err(error) => (Err(error), Step::Done),
        },
        Step::Components(after, systems) => {
            match page_seen(pool, privacy, after.as_deref()).await {
                Ok(page) if page.is_empty() => (Ok(systems_of(&systems)), Step::Done),
                Ok(page) => {
                    let after = page.last().map(|row| row.entry.name.clone());
                    (Ok(components(&page)), Step::Components(after, systems))
                }
                Err(error) => (Err(error), Step::Done),
            }
        }
        Step::Done => return None,
    };
    Some((chunk.map(Bytes::from), step))
}

/// A page's components, each a document.
fn components(page: &[ExportEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(page.len() * 1024);
    for row in page {
        if let Ok(component) = entity::component(row) {
            document(&mut out, &component.document);
        }
    }
    out
}

/// The systems, each a document.
fn systems_of(systems: &Systems) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, owner) in systems.owners() {
        document(&mut out, &entity::system(name, owner));
    }
    out
}

/// Appends one document: its separator and its JSON form.
fn document(out: &mut Vec<u8>, value: &impl Serialize) {
    out.extend_from_slice(b"---\n");
    // Plain data with string keys: writing it cannot fail.
    if serde_json::to_writer_pretty(&mut *out, value).is_ok() {
        out.push(b'\n');
    }
}
