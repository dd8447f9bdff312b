//! Pushes decided without a read: a `synced` or `no_file` repository whose
//! recorded commit is a push's `before`, under the current fingerprint,
//! moves to the push's `after` when the push touched no project file.
//!
//! The move is a compare-and-set on (recorded commit, status, fingerprint),
//! so it cannot undo a reconcile: one that committed first changed the
//! recorded commit (or the status), and the move then changes nothing; the
//! caller enqueues the repository as for any push. One that commits later
//! holds a claim taken after the push was received, reads GitHub afresh and
//! wins, as it should.

use std::collections::BTreeSet;

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::Arguments;

use super::known::RepoColumns;
use crate::db::one_statement::Part;
use crate::db::queue::SETTLED;
use crate::directory::OwnersMode;
use crate::project::relations::RelationsMode;
use crate::source::{RepoId, RepoInfo};

/// What decided a repository's recorded state: the project file
/// pattern(s), the rules' version and the owner setting. A push is decided without a read
/// only while the recorded fingerprint is the current one: after a change
/// of settings or rules, every repository is read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// The fingerprint under `project_files`, the project file pattern(s).
    /// Settings that later decide a state too are added here, each as its
    /// own `; key value` part.
    pub fn new(project_files: &[&str]) -> Self {
        let files = serde_json::to_string(project_files).unwrap_or_default();
        Self(format!(
            "rules {}; files {files}",
            crate::project::RULES_VERSION
        ))
    }

    /// The same, under the owner setting `owners` (an owner that was
    /// flagged may break the file now, or the reverse).
    pub fn with_owners(self, owners: OwnersMode) -> Self {
        Self(format!("{}; owners {owners}", self.0))
    }

    /// The same under the relations setting `relations`: only `require`
    /// decides a state differently (a dependency on no project makes the
    /// file invalid), so `off` and `warn` leave the fingerprint as it was.
    pub fn with_relations(self, relations: RelationsMode) -> Self {
        match relations {
            RelationsMode::Require => Self(format!("{}; relations {relations}", self.0)),
            RelationsMode::Off | RelationsMode::Warn => self,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One repository's recorded commit to move, from `before` to `after`, with
/// the names its push carried (the move requires them to be the stored
/// ones; a node id the registry lacks is stored with it). The same
/// statement's [`super::KnownRows`] leaves the moved rows out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreePush<'a> {
    pub id: RepoId,
    pub info: &'a RepoInfo,
    pub node_id: Option<&'a str>,
    pub before: &'a str,
    pub after: &'a str,
}

/// The compare-and-set of [`FreePush`]es, as a [`Part`] that returns the
/// ids it moved under the name [`SETTLED`], so that the same statement's
/// enqueue leaves out exactly those.
pub struct FreePushRows<'a> {
    columns: RepoColumns<'a>,
    befores: Vec<&'a str>,
    afters: Vec<&'a str>,
    fingerprint: &'a str,
    /// Every row the statement writes in `repositories`, locked first in
    /// id order (as every writer locks them), so that two statements never
    /// wait for each other in a circle.
    locked: Vec<i64>,
}

impl<'a> FreePushRows<'a> {
    /// `pushes` hold each id once (the caller merges a group's pushes).
    pub fn new(pushes: &[FreePush<'a>], fingerprint: &'a Fingerprint) -> Self {
        let mut pushes = pushes.to_vec();
        pushes.sort_by_key(|p| p.id);
        let mut columns = RepoColumns::default();
        for push in &pushes {
            columns.push(push.id, push.info, push.node_id);
        }
        Self {
            columns,
            befores: pushes.iter().map(|p| p.before).collect(),
            afters: pushes.iter().map(|p| p.after).collect(),
            fingerprint: fingerprint.as_str(),
            locked: pushes.iter().map(|p| p.id.0).collect(),
        }
    }

    /// Also locks `ids` first, in id order: the rows the same statement's
    /// [`super::KnownRows`] may write.
    pub fn locking(mut self, ids: impl IntoIterator<Item = RepoId>) -> Self {
        let all: BTreeSet<i64> = self
            .locked
            .iter()
            .copied()
            .chain(ids.into_iter().map(|id| id.0))
            .collect();
        self.locked = all.into_iter().collect();
        self
    }

    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
}

impl Part for FreePushRows<'_> {
    fn sql(&self) -> &'static str {
        // A renamed or transferred repository is not moved: its push is
        // read. The rows the statement writes are locked first, in id order.
        "update repositories r set synced_sha = f.after, last_synced_at = now(), observed_at = now(),
             node_id = coalesce(f.node_id, r.node_id)
         from unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                     $6::text[], $7::text[], $8::text[], $9::text[])
             as f(id, owner, name, installation_id, default_branch, html_url, node_id,
                  before, after)
         where r.id = f.id
           and r.id in (select id from repositories where id = any($11)
                        order by id for update)
           and r.status in ('synced', 'no_file')
           and r.synced_sha = f.before
           and r.fingerprint = $10
           and (r.owner, r.name, r.installation_id, r.default_branch, r.html_url)
               is not distinct from
               (f.owner, f.name, f.installation_id, f.default_branch, f.html_url)"
    }

    fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
        self.columns.add_to(args)?;
        args.add(&self.befores)?;
        args.add(&self.afters)?;
        args.add(self.fingerprint)?;
        args.add(&self.locked)?;
        Ok(())
    }

    fn returns(&self) -> Option<(&'static str, &'static str)> {
        Some((SETTLED, "r.id"))
    }
}

/// Git's blob id of `bytes` (what GitHub names a file's content by):
/// SHA-1 of `blob LEN\0` and the bytes.
pub fn blob_id(bytes: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blob_id_should_be_the_one_git_gives() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn the_fingerprint_should_change_with_the_patterns() {
        let one = Fingerprint::new(&["project.yaml"]);
        assert_eq!(one, Fingerprint::new(&["project.yaml"]));
        assert_ne!(one, Fingerprint::new(&["services/project.yaml"]));
        assert!(one
            .as_str()
            .contains(&crate::project::RULES_VERSION.to_string()));
        let warn = one.clone().with_owners(OwnersMode::Warn);
        assert_ne!(warn, one.clone().with_owners(OwnersMode::Require));
        assert_eq!(
            warn,
            Fingerprint::new(&["project.yaml"]).with_owners(OwnersMode::Warn)
        );
    }

    #[test]
    fn the_fingerprint_should_change_only_when_relations_are_required() {
        let one = Fingerprint::new(&["project.yaml"]);
        assert_eq!(one.clone().with_relations(RelationsMode::Warn), one);
        assert_eq!(one.clone().with_relations(RelationsMode::Off), one);
        assert_ne!(one.clone().with_relations(RelationsMode::Require), one);
    }
}
