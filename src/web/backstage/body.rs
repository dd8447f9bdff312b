//! The export's body, written as it is read: a page of entries at a time
//! (`registry::read_models::export`), so an export of any size holds one page in memory.
//!
//! The comment at the top counts what is left out, a system's owner
//! depends on all its components, and no document may refer to one left
//! out, so the registry is read twice: a first pass keeps only counts and
//! names (the components exported and why others are not, each system's
//! owners, the groups that own components), the second writes each page of
//! components as it reads it, then the systems, then the groups.
//!
//! Each document is written in YAML's JSON form (YAML 1.2 reads JSON as it
//! is, Backstage's reader among them), so its text is escaped by
//! `serde_json`, and by [`printable`] for what JSON leaves raw but YAML
//! refuses.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use axum::body::Bytes;
use futures_util::{stream, Stream};
use serde::Serialize;
use sqlx::PgPool;

use super::entity::{self, Refused, Systems};
use super::names::is_valid_name;
use super::printable;
use crate::directory::{DirectoryDb, KnownTeam};
use crate::project::OwnerStatus;
use crate::registry::read_models::export::{export_page, ExportEntry};
use crate::registry::RegistryError;
use crate::web::privacy::Privacy;

/// Levels of parent teams followed at most (GitHub nests teams far less
/// deep; the bound only stops a cycle).
const MAX_TEAM_DEPTH: usize = 16;

/// What a first pass over the registry found.
#[derive(Debug, Default)]
pub struct Tally {
    pub refused_by_name: usize,
    pub refused_by_owner_name: usize,
    pub refused_by_owner_hidden: usize,
    pub tags_left_out: usize,
    pub systems: Systems,
    /// The names of the components exported.
    pub exported: HashSet<String>,
    /// How many exported components depend on each name.
    depended_on: HashMap<String, usize>,
    /// Dependencies on a name Backstage refuses.
    unfit_dependencies: usize,
    /// The groups that own exported components, each with its team's id
    /// when the directory resolved the owner.
    owning_groups: BTreeMap<String, Option<i64>>,
}

impl Tally {
    fn count(&mut self, row: &ExportEntry) {
        match entity::component(row) {
            Ok(component) => {
                self.exported.insert(row.entry.name.clone());
                self.tags_left_out += component.tags_left_out;
                if let Some(system) = component.system {
                    self.systems.add(system, component.document.owner());
                }
                for name in component.document.dependencies() {
                    *self.depended_on.entry(name.to_owned()).or_default() += 1;
                }
                self.unfit_dependencies += row
                    .entry
                    .fields
                    .depends_on
                    .iter()
                    .filter(|d| !is_valid_name(d))
                    .count();
                if let Some(group) = component.document.owning_group() {
                    let team = match row.entry.resolved.owner_status {
                        OwnerStatus::Team | OwnerStatus::Renamed | OwnerStatus::Deleted => {
                            row.entry.resolved.owner_team_id
                        }
                        _ => None,
                    };
                    let known = self.owning_groups.entry(group.to_owned()).or_default();
                    *known = known.or(team);
                }
            }
            Err(Refused::Name) => self.refused_by_name += 1,
            Err(Refused::OwnerName) => self.refused_by_owner_name += 1,
            Err(Refused::OwnerHidden) => self.refused_by_owner_hidden += 1,
        }
    }

    /// Dependencies left out: on a name Backstage refuses, or on a project
    /// that is not exported (unknown, or itself left out).
    fn dependencies_left_out(&self) -> usize {
        let dangling: usize = self
            .depended_on
            .iter()
            .filter(|(name, _)| !self.exported.contains(*name))
            .map(|(_, n)| n)
            .sum();
        self.unfit_dependencies + dangling
    }

    /// The comment at the top of the export: what it holds, then what it
    /// leaves out, each reason on its own line.
    fn header(&self, groups: usize) -> String {
        let count = |n: usize, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        let components = |n| count(n, "component", "components");
        format!(
            "# Roster's registry as Backstage catalog entities: {}, {}, {}.\n\
             # Left out as Backstage would refuse its name: {}, {}.\n\
             # Left out as Backstage would refuse its owner's name: {}.\n\
             # Left out as this reader may not see its owner: {}.\n\
             # Left out as it names a project not exported: {}.\n",
            components(self.exported.len()),
            count(self.systems.count(), "system", "systems"),
            count(groups, "group", "groups"),
            components(self.refused_by_name),
            count(self.tags_left_out, "tag", "tags"),
            components(self.refused_by_owner_name),
            components(self.refused_by_owner_hidden),
            count(self.dependencies_left_out(), "dependency", "dependencies"),
        )
    }
}

/// A `Group` of the export: the team's name, and its parent's group when
/// the reader may see the parent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupInfo {
    pub display_name: Option<String>,
    pub parent: Option<String>,
}

/// The groups of the export, by name: each that owns a component, and
/// the parents of their teams that the reader may see, so that no
/// `parent` dangles either.
pub async fn groups(
    pool: &PgPool,
    privacy: &Privacy,
    owning: &BTreeMap<String, Option<i64>>,
) -> Result<BTreeMap<String, GroupInfo>, RegistryError> {
    let directory = DirectoryDb::new(pool.clone());
    let mut teams: HashMap<i64, KnownTeam> = HashMap::new();
    let mut wanted: Vec<i64> = owning.values().flatten().copied().collect();
    for _ in 0..MAX_TEAM_DEPTH {
        wanted.retain(|id| !teams.contains_key(id));
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            break;
        }
        let found = directory.teams_by_id(&wanted).await?;
        wanted = found
            .iter()
            .filter_map(|t| t.team.parent_id)
            .filter(|parent| !privacy.hides_team(*parent))
            .collect();
        for team in found {
            teams.entry(team.team.id).or_insert(team);
        }
    }
    let mut out = BTreeMap::new();
    for (name, team) in owning {
        out.entry(name.clone()).or_insert_with(GroupInfo::default);
        let mut at = team.and_then(|id| teams.get(&id).map(|t| (name.clone(), t)));
        for _ in 0..MAX_TEAM_DEPTH {
            let Some((name, team)) = at.take() else {
                break;
            };
            let parent = team
                .team
                .parent_id
                .filter(|p| !privacy.hides_team(*p))
                .and_then(|p| teams.get(&p))
                .filter(|p| is_valid_name(&p.team.slug));
            let info = GroupInfo {
                display_name: Some(team.team.name.clone()),
                parent: parent.map(|p| p.team.slug.clone()),
            };
            // A parent seen already (as an owner or an ancestor) is whole.
            let seen = out
                .get(&name)
                .is_some_and(|i: &GroupInfo| i.display_name.is_some());
            out.insert(name, info);
            if seen {
                break;
            }
            at = parent.map(|p| (p.team.slug.clone(), p));
        }
    }
    Ok(out)
}

/// A page of the registry as the reader may see it (an owner it may not
/// see reads `hidden`: such a component is left out, counted apart).
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

/// What the second pass writes after the components.
struct Rest {
    /// The components exported: what a dependency may name.
    exported: Arc<HashSet<String>>,
    systems: Systems,
    groups: BTreeMap<String, GroupInfo>,
}

/// Where the writing stands.
enum Step {
    /// The first pass, then the comment.
    Start,
    /// The components after this name (from the first when `None`).
    Components(Option<String>, Rest),
    Done,
}

/// The export of the registry that `pool` holds, as a stream of chunks. A
/// read that fails midway ends the stream with an error, so the client
/// sees a broken transfer, never a shorter catalog.
pub fn chunks(
    pool: PgPool,
    privacy: Privacy,
) -> impl Stream<Item = Result<Bytes, RegistryError>> + Send + 'static {
    stream::unfold(Step::Start, move |step| {
        let pool = pool.clone();
        let privacy = privacy.clone();
        async move { next(&pool, &privacy, step).await }
    })
}

type Chunk = Result<Bytes, RegistryError>;

async fn next(pool: &PgPool, privacy: &Privacy, step: Step) -> Option<(Chunk, Step)> {
    let (chunk, step) = match step {
        Step::Start => match start(pool, privacy).await {
            Ok((header, rest)) => (Ok(header.into_bytes()), Step::Components(None, rest)),
            Err(error) => (Err(error), Step::Done),
        },
        Step::Components(after, rest) => match page_seen(pool, privacy, after.as_deref()).await {
            Ok(page) if page.is_empty() => (Ok(the_rest(&rest)), Step::Done),
            Ok(page) => {
                let after = page.last().map(|row| row.entry.name.clone());
                let out = components(&page, &rest.exported);
                (Ok(out), Step::Components(after, rest))
            }
            Err(error) => (Err(error), Step::Done),
        },
        Step::Done => return None,
    };
    Some((chunk.map(Bytes::from), step))
}

/// The first pass and the groups: the comment, and what the second pass
/// needs.
async fn start(pool: &PgPool, privacy: &Privacy) -> Result<(String, Rest), RegistryError> {
    let tally = tally(pool, privacy).await?;
    let groups = groups(pool, privacy, &tally.owning_groups).await?;
    let header = tally.header(groups.len());
    Ok((
        header,
        Rest {
            exported: Arc::new(tally.exported),
            systems: tally.systems,
            groups,
        },
    ))
}

/// A page's components, each a document, naming only exported components.
fn components(page: &[ExportEntry], exported: &HashSet<String>) -> Vec<u8> {
    let mut out = Vec::with_capacity(page.len() * 1024);
    for row in page {
        if let Ok(mut component) = entity::component(row) {
            component
                .document
                .keep_dependencies(|name| exported.contains(name));
            document(&mut out, &component.document);
        }
    }
    out
}

/// The systems, then the groups, each a document.
fn the_rest(rest: &Rest) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, owner) in rest.systems.owners() {
        document(&mut out, &entity::system(name, owner));
    }
    for (name, info) in &rest.groups {
        let group = entity::group(name, info.display_name.as_deref(), info.parent.as_deref());
        document(&mut out, &group);
    }
    out
}

/// Appends one document: its separator and its JSON form, within YAML's
/// printable set.
fn document(out: &mut Vec<u8>, value: &impl Serialize) {
    out.extend_from_slice(b"---\n");
    // Plain data with string keys: writing it cannot fail.
    if printable::write_pretty(out, value).is_ok() {
        out.push(b'\n');
    }
}
