//! What the fake GitHub knows: installations, repositories with their
//! commits and files, tokens, rate budgets, injected faults and counters.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fault::Fault;
use super::hook_deliveries::HookLog;

/// Requests an installation may send per hour (GitHub's default).
pub const DEFAULT_BUDGET: u64 = 5000;

#[derive(Debug, Clone)]
pub struct Installation {
    pub id: i64,
    pub login: String,
    pub suspended: bool,
    pub deleted: bool,
    /// A personal account (no teams), not an organisation.
    pub personal: bool,
    /// The permissions it granted (name → level) and the events it
    /// delivers: by default all that `app.yml` asks for.
    pub permissions: BTreeMap<String, String>,
    pub events: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Commit {
    pub sha: String,
    pub files: BTreeMap<String, Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct Repo {
    pub id: i64,
    pub installation: i64,
    pub owner: String,
    pub name: String,
    pub archived: bool,
    /// Private, as GitHub's repositories of an organisation start; public
    /// once [`FakeGithub::set_private`](super::FakeGithub::set_private) says so.
    pub private: bool,
    pub default_branch: String,
    /// Branch name → head sha.
    pub branches: BTreeMap<String, String>,
    pub commits: HashMap<String, Commit>,
}

impl Repo {
    pub fn head(&self) -> Option<&Commit> {
        let sha = self.branches.get(&self.default_branch)?;
        self.commits.get(sha)
    }

    /// A branch name or a commit sha, as GitHub resolves a `ref`.
    pub fn resolve(&self, reference: &str) -> Option<&Commit> {
        match self.branches.get(reference) {
            Some(sha) => self.commits.get(sha),
            None => self.commits.get(reference),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Token {
    pub installation: i64,
    pub expires_at: SystemTime,
}

#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub limit: u64,
    pub remaining: u64,
    pub reset: u64,
}

/// One authenticated request as it reached the fake.
#[derive(Debug, Clone)]
pub struct Logged {
    /// When it arrived (before any latency or fault delayed it).
    pub at: Instant,
    pub route: &'static str,
    /// Whose token it carried; `None` for the App's JWT.
    pub installation: Option<i64>,
    /// The answer's status; 0 for a dropped connection.
    pub status: u16,
}

/// A change to a repository's files pushed as a new commit once a request
/// of `after` (a route of [`super::routes`]) has been answered.
pub struct Move {
    pub after: &'static str,
    pub repo: i64,
    pub change: Box<dyn FnOnce(&mut Files) + Send>,
}

/// A commit's files: path → bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

impl std::fmt::Debug for Move {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Move")
            .field("after", &self.after)
            .field("repo", &self.repo)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
pub struct World {
    pub app_id: u64,
    pub installations: BTreeMap<i64, Installation>,
    pub repos: BTreeMap<i64, Repo>,
    pub tokens: HashMap<String, Token>,
    /// (installation, resource) → budget.
    pub budgets: HashMap<(i64, &'static str), Budget>,
    pub faults: Vec<Fault>,
    pub latency: Duration,
    /// Route name → requests received.
    pub counts: BTreeMap<String, u64>,
    /// Every authenticated request, in the order they were answered.
    pub log: Vec<Logged>,
    pub not_modified: u64,
    pub token_lifetime: Duration,
    /// The App's webhook delivery log (its own lock: redeliveries in
    /// flight write to it).
    pub hook_log: Arc<Mutex<HookLog>>,
    /// Check runs by id.
    pub check_runs: BTreeMap<i64, super::checks::CheckRun>,
    pub next_check_run: i64,
    /// Installations without `checks: write` (posts answer 403).
    pub checks_forbidden: std::collections::BTreeSet<i64>,
    /// (commit sha, path) that are symbolic links.
    pub symlinks: std::collections::BTreeSet<(String, String)>,
    /// A commit's parent, for the commits that record one (pull
    /// requests' heads): what a pull request's files compare against.
    pub parents: HashMap<String, String>,
    /// (repository, pull request number) → head sha.
    pub pulls: BTreeMap<(i64, i64), String>,
    /// GraphQL answers with more tree entries than this are refused as
    /// GitHub refuses a query that takes too long.
    pub refuse_entries_over: Option<usize>,
    /// Entries the Git trees API returns before it says `truncated`
    /// (GitHub's is 100,000).
    pub tree_entry_cap: usize,
    /// Each installation's organisation: teams and members.
    pub directories: BTreeMap<i64, super::directory::OrgDirectory>,
    /// Commits pushed right after a request of a given route is answered:
    /// the head moving in the middle of a read.
    pub moves: Vec<Move>,
    next_id: i64,
    next_sha: u64,
}

impl World {
    pub fn new(app_id: u64) -> Self {
        Self {
            app_id,
            installations: BTreeMap::new(),
            repos: BTreeMap::new(),
            tokens: HashMap::new(),
            budgets: HashMap::new(),
            faults: Vec::new(),
            latency: Duration::ZERO,
            directories: BTreeMap::new(),
            counts: BTreeMap::new(),
            log: Vec::new(),
            not_modified: 0,
            token_lifetime: Duration::from_secs(3600),
            hook_log: Arc::default(),
            check_runs: BTreeMap::new(),
            next_check_run: 7_000_000,
            checks_forbidden: Default::default(),
            symlinks: Default::default(),
            parents: HashMap::new(),
            pulls: BTreeMap::new(),
            refuse_entries_over: None,
            tree_entry_cap: 100_000,
            moves: Vec::new(),
            next_id: 100_000,
            next_sha: 1,
        }
    }

    /// A fresh id (teams, members), never one a repository has.
    pub fn new_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    pub fn new_sha(&mut self) -> String {
        self.next_sha += 1;
        // 40 hex digits, unique, and not all alike.
        format!(
            "{:016x}{:024x}",
            self.next_sha.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            self.next_sha
        )
    }

    pub fn new_repo(&mut self, installation: i64, name: &str) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let owner = self
            .installations
            .get(&installation)
            .map(|i| i.login.clone())
            .unwrap_or_default();
        let sha = self.new_sha();
        let commit = Commit {
            sha: sha.clone(),
            files: BTreeMap::new(),
        };
        self.repos.insert(
            id,
            Repo {
                id,
                installation,
                owner,
                name: name.to_owned(),
                archived: false,
                private: true,
                default_branch: "main".into(),
                branches: BTreeMap::from([("main".to_owned(), sha.clone())]),
                commits: HashMap::from([(sha, commit)]),
            },
        );
        id
    }

    /// A new commit on the default branch with `change` applied to its files.
    pub fn commit(
        &mut self,
        repo: i64,
        change: impl FnOnce(&mut BTreeMap<String, Vec<u8>>),
    ) -> String {
        let sha = self.new_sha();
        let Some(repo) = self.repos.get_mut(&repo) else {
            return sha;
        };
        let mut files = repo.head().map(|c| c.files.clone()).unwrap_or_default();
        change(&mut files);
        repo.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                files,
            },
        );
        repo.branches
            .insert(repo.default_branch.clone(), sha.clone());
        sha
    }

    /// A commit based on the default branch's head with `change` applied,
    /// on no branch: a pull request's head (a fork's too, which GitHub
    /// keeps in the base repository).
    pub fn side_commit(
        &mut self,
        repo: i64,
        change: impl FnOnce(&mut BTreeMap<String, Vec<u8>>),
    ) -> String {
        let sha = self.new_sha();
        let Some(repo) = self.repos.get_mut(&repo) else {
            return sha;
        };
        let mut files = repo.head().map(|c| c.files.clone()).unwrap_or_default();
        change(&mut files);
        repo.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                files,
            },
        );
        sha
    }

    pub fn budget(&mut self, installation: i64, resource: &'static str) -> &mut Budget {
        self.budgets
            .entry((installation, resource))
            .or_insert_with(|| Budget {
                limit: DEFAULT_BUDGET,
                remaining: DEFAULT_BUDGET,
                reset: epoch_secs(SystemTime::now()) + 3600,
            })
    }
}

pub fn epoch_secs(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
