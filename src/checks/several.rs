//! A pull request's check with several project files
//! (`ROSTER_PROJECT_FILES` with patterns): the paths it changes are listed
//! (one request per 100 files), the matching ones are read at the head
//! together (one GraphQL query for all of them, at most [`MAX_READS`]; no
//! read for a file the listing says is removed or renamed away, and no
//! query when that leaves none; a file GitHub calls binary is read once
//! more over REST, as the single file is, so a NUL has its line and
//! column), and all of them are evaluated together against one read-only
//! snapshot of the registry.

use std::collections::HashMap;

use sqlx::PgPool;

use super::budget::ChecksBudget;
use super::failure::Failure;
use crate::directory::OwnersMode;
use crate::github::checks_api::{said_binary, ChecksApi};
use crate::github::checks_api::{MAX_PAGES, PER_PAGE};
use crate::github::rate_limit::Resource;
use crate::project::files_verdict::{declared_names, evaluate_files, TouchedFile};
use crate::project::relations::RelationsMode;
use crate::project::verdict::{clip_summary, HeadFile, Parsed, Verdict};
use crate::project::ProjectFiles;
use crate::registry::check_records::check_requests::ClaimedRequest;
use crate::registry::check_records::owner_check::OwnerCheck;
use crate::registry::check_records::read_only::RegistryReader;
use crate::registry::check_records::relation_check::{CheckedFile, Reading};

/// Project files one evaluation reads at most; the others a pull request
/// touches are named as not previewed (the default branch's check shows
/// them once merged).
pub const MAX_READS: usize = 50;

/// What an evaluation of several files uses of the checks loop.
pub(super) struct Several<'a> {
    pub api: &'a ChecksApi,
    /// What checks may spend: each page of the changed files takes its share.
    pub budget: &'a ChecksBudget,
    pub pool: &'a PgPool,
    pub files: &'a ProjectFiles,
    pub owners: OwnersMode,
    pub relations: RelationsMode,
}

impl Several<'_> {
    /// The verdict on the project files `request`'s pull request touches.
    pub(super) async fn evaluate(&self, request: &ClaimedRequest) -> Result<Verdict, Failure> {
        let Some(number) = request.pull_request else {
            return Ok(outside_a_pull_request());
        };
        let (installation, owner, name) = (request.installation_id, &request.owner, &request.name);
        let repositories = if self.budget.reserve {
            crate::registry::count_of_installation(self.pool, installation)
                .await
                .unwrap_or(0)
        } else {
            0
        };
        let spend = || {
            self.budget
                .spend(self.api, installation, Resource::Core, repositories)
        };
        let changed = self
            .api
            .pull_request_paths(installation, owner, name, number, spend)
            .await
            .map_err(Failure::from)?;
        let matching = self.files.select(changed.paths.iter().cloned());
        let read = matching.len().min(MAX_READS);
        let previewed = &matching[..read];
        // A file the pull request removes is absent at its head: not read,
        // so not among `heads` below.
        let present: Vec<String> = previewed
            .iter()
            .filter(|path| !changed.gone.contains(path))
            .cloned()
            .collect();
        let mut heads = self
            .api
            .files_at_paths(installation, owner, name, &request.head_sha, &present)
            .await
            .map_err(Failure::from)?;
        for (path, head) in present.iter().zip(heads.iter_mut()) {
            if said_binary(head) {
                // A NUL makes GitHub call the file binary: its bytes tell
                // where, for a share of the budget as any REST request.
                spend().map_err(Failure::from)?;
                let (repo, sha) = ((owner.as_str(), name.as_str()), &request.head_sha);
                if let Some(bytes) = self.api.text_at(installation, repo, sha, path).await {
                    *head = HeadFile::Found(bytes);
                }
            }
        }
        let mut heads: HashMap<String, HeadFile> = present.into_iter().zip(heads).collect();
        let touched: Vec<TouchedFile> = previewed
            .iter()
            .map(|path| TouchedFile {
                path: path.clone(),
                parsed: Parsed::read(path, heads.remove(path).unwrap_or(HeadFile::Absent)),
            })
            .collect();
        let mut reader = RegistryReader::begin(self.pool)
            .await
            .map_err(Failure::db)?;
        let names = declared_names(&touched);
        let snapshot = if request.public {
            reader.snapshot_for_public(request.repo_id, &names).await
        } else {
            reader.snapshot(request.repo_id, &names).await
        }
        .map_err(Failure::db)?;
        let mut verdict = evaluate_files(
            &request.head_sha,
            &touched,
            &snapshot,
            matching.len() - read,
        );
        if !changed.complete {
            verdict.summary = clip_summary(format!(
                "{}\nThe pull request changes more files than the {} a check lists; project \
             files beyond them are not previewed here.\n",
                verdict.summary,
                PER_PAGE * MAX_PAGES
            ));
        }
        for file in &touched {
            let owners = OwnerCheck {
                installation,
                project_file: &file.path,
                mode: self.owners,
                public_pull_request: request.public,
            };
            reader
                .add_owner_notes(&owners, &file.parsed, &snapshot.entries, &mut verdict)
                .await
                .map_err(Failure::db)?;
        }
        let paths: Vec<String> = touched.iter().map(|t| t.path.clone()).collect();
        let reading = Reading {
            repo: request.repo_id,
            paths: &paths,
            public: request.public,
        };
        let files = CheckedFile::all(&touched);
        let entries = &snapshot.entries;
        reader
            .finish_with_relation_notes(self.relations, &reading, &files, entries, verdict)
            .await
            .map_err(Failure::db)
    }
}

/// A check asked again on a commit of no pull request: the default
/// branch's own check (posted by the reconcile) says what it found.
fn outside_a_pull_request() -> Verdict {
    Verdict {
        conclusion: "neutral",
        title: "not a pull request".into(),
        summary: "With several project files, Roster previews the files a pull request \
                  changes; this commit belongs to none. The default branch's check shows \
                  what the registry applied.\n"
            .into(),
        annotations: Vec::new(),
    }
}
