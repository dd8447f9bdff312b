//! A fake GitHub for tests and benchmarks: an HTTP server on 127.0.0.1 that
//! models GitHub's *state* (an App, its installations, their repositories,
//! commits and files) and answers the REST and GraphQL routes Roster uses in
//! GitHub's shapes, with rate-limit headers, ETags, App JWT checks,
//! installation tokens and injectable faults. Every request is counted by
//! route so tests can assert request budgets.
//!
//! Use it from a test crate with `mod support; use support::fake_github;`.
//! It also answers under GitHub Enterprise Server's layout (`/api/v3/...`
//! and `/api/graphql`), see [`FakeGithub::enterprise_settings`].

pub mod checks;
pub mod directory;
pub mod fault;
pub mod graphql;
pub mod hook_deliveries;
pub mod jwt;
pub mod manifest;
pub mod pulls;
pub mod rest;
pub mod touched;
pub mod trees;
pub mod world;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use octocrab::jsonwebtoken::DecodingKey;
use secrecy::SecretString;
use serde_json::Value;
use url::Url;

pub use fault::{Fault, FaultKind};
use rest::Answer;
pub use world::Logged;
use world::{epoch_secs, World};

/// The fake App's id (the `iss` its JWTs must carry).
pub const APP_ID: u64 = 4242;

/// The App's private key (an RSA test key, never used anywhere real).
pub const PRIVATE_KEY: &str = include_str!("../../fixtures/test-app-key.pem");
const PUBLIC_KEY: &str = include_str!("../../fixtures/test-app-key.pub.pem");

/// Route names, as counted by [`FakeGithub::count`].
pub mod routes {
    pub const INSTALLATIONS: &str = "GET /app/installations";
    pub const ACCESS_TOKENS: &str = "POST /app/installations/{id}/access_tokens";
    pub const REPO_BY_ID: &str = "GET /repositories/{id}";
    pub const REPO: &str = "GET /repos/{owner}/{repo}";
    pub const COMMIT: &str = "GET /repos/{owner}/{repo}/commits/{ref}";
    pub const CONTENTS: &str = "GET /repos/{owner}/{repo}/contents/{path}";
    /// The GraphQL listing (`repositoryOwner` pages).
    pub const GRAPHQL: &str = "POST /graphql";
    /// The GraphQL batch read (`nodes(ids:)` and aliases by name).
    pub const GRAPHQL_READ: &str = "POST /graphql (batch read)";
    pub const HOOK_DELIVERIES: &str = "GET /app/hook/deliveries";
    pub const HOOK_ATTEMPTS: &str = "POST /app/hook/deliveries/{id}/attempts";
    /// The GraphQL read of the project file at one commit.
    pub const GRAPHQL_FILE: &str = "POST /graphql (file at commit)";
    /// A pull request's changed files, a page of them.
    pub const PULL_FILES: &str = "GET /repos/{owner}/{repo}/pulls/{number}/files";
    pub const CHECK_RUN_CREATE: &str = "POST /repos/{owner}/{repo}/check-runs";
    pub const CHECK_RUN_UPDATE: &str = "PATCH /repos/{owner}/{repo}/check-runs/{id}";
    pub const CHECK_RUNS_FOR_REF: &str = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs";
    /// The GraphQL reads of an organisation's teams and members.
    pub const GRAPHQL_DIRECTORY: &str = "POST /graphql (directory)";
    /// The Git trees API.
    pub const GIT_TREE: &str = "GET /repos/{owner}/{repo}/git/trees/{sha}";
    /// The GraphQL read of blobs by `object(expression:)`.
    pub const GRAPHQL_BLOBS: &str = "POST /graphql (blobs)";
    /// The GraphQL read of a push's touched files (`query ReadTouched`).
    pub const GRAPHQL_TOUCHED: &str = "POST /graphql (touched files)";
}

/// Whether `route` is one of the GraphQL routes.
fn is_graphql(route: &str) -> bool {
    route == routes::GRAPHQL
        || route == routes::GRAPHQL_READ
        || route == routes::GRAPHQL_FILE
        || route == routes::GRAPHQL_DIRECTORY
        || route == routes::GRAPHQL_BLOBS
        || route == routes::GRAPHQL_TOUCHED
}

struct Shared {
    world: Mutex<World>,
    key: DecodingKey,
    base: String,
    manifests: Mutex<manifest::Manifests>,
}

impl Shared {
    fn manifests(&self) -> MutexGuard<'_, manifest::Manifests> {
        self.manifests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn world(&self) -> MutexGuard<'_, World> {
        // A test that panicked while holding the lock already failed.
        self.world
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running fake GitHub; stops when dropped.
pub struct FakeGithub {
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Who a request authenticated as.
#[derive(Debug, Clone, Copy)]
enum Caller {
    App,
    Installation(i64),
}

impl FakeGithub {
    /// Starts an empty GitHub (no installations) on a free port.
    pub async fn start() -> FakeGithub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let key = DecodingKey::from_rsa_pem(PUBLIC_KEY.as_bytes()).expect("test public key");
        let shared = Arc::new(Shared {
            world: Mutex::new(World::new(APP_ID)),
            key,
            base: format!("http://{addr}"),
            manifests: Mutex::default(),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGithub { shared, server }
    }

    /// GitHub's web address for this fake (the manifest flow's pages).
    pub fn web_url(&self) -> String {
        self.shared.base.clone()
    }

    /// A conversion code for an App made from `manifest`, owned by `owner`
    /// (what GitHub hands back after "Create GitHub App").
    pub fn manifest_code(&self, manifest: Value, owner: &str) -> String {
        self.shared.manifests().register(manifest, owner)
    }

    /// Manifests posted to the new-App pages, oldest first.
    pub fn posted_manifests(&self) -> Vec<manifest::Posted> {
        self.shared.manifests().posted.clone()
    }

    /// Makes every conversion fail this way (`None`: answer again).
    pub fn fail_conversions(&self, failure: Option<manifest::ConversionFailure>) {
        self.shared.manifests().failure = failure;
    }

    /// Conversions asked for so far.
    pub fn conversions(&self) -> u64 {
        self.shared.manifests().conversions
    }

    pub fn api_url(&self) -> Url {
        Url::parse(&format!("{}/", self.shared.base)).expect("fake URL")
    }

    pub fn graphql_url(&self) -> Url {
        Url::parse(&format!("{}/graphql", self.shared.base)).expect("fake URL")
    }

    /// Settings of an App pointed at this fake.
    pub fn settings(&self) -> roster::config::GithubAppSettings {
        roster::config::GithubAppSettings {
            app_id: APP_ID,
            private_key: SecretString::from(PRIVATE_KEY.to_owned()),
            webhook_secret: SecretString::from("fake-webhook-secret".to_owned()),
            api_url: self.api_url(),
            graphql_url: self.graphql_url(),
        }
    }

    /// Settings in GitHub Enterprise Server's layout (`/api/v3`, `/api/graphql`).
    pub fn enterprise_settings(&self) -> roster::config::GithubAppSettings {
        let base = &self.shared.base;
        roster::config::GithubAppSettings {
            api_url: Url::parse(&format!("{base}/api/v3")).expect("fake URL"),
            graphql_url: Url::parse(&format!("{base}/api/graphql")).expect("fake URL"),
            ..self.settings()
        }
    }

    // ---- the world ----

    pub fn add_installation(&self, id: i64, login: &str) {
        let (permissions, events) = roster::setup::asked::asked();
        self.shared.world().installations.insert(
            id,
            world::Installation {
                id,
                login: login.to_owned(),
                suspended: false,
                deleted: false,
                personal: false,
                permissions,
                events,
            },
        );
    }

    /// What an installation granted, as an older registration of the App
    /// may have: `permissions` (name → level) and `events`.
    pub fn grant(&self, installation: i64, permissions: &[(&str, &str)], events: &[&str]) {
        if let Some(i) = self.shared.world().installations.get_mut(&installation) {
            i.permissions = permissions
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            i.events = events.iter().map(|e| (*e).to_owned()).collect();
        }
    }

    /// An installation on a personal account (no teams).
    pub fn add_personal_installation(&self, id: i64, login: &str) {
        self.add_installation(id, login);
        if let Some(i) = self.shared.world().installations.get_mut(&id) {
            i.personal = true;
        }
    }

    /// Renames an installation's account (its id stays).
    pub fn rename_account(&self, installation: i64, login: &str) {
        let mut world = self.shared.world();
        if let Some(i) = world.installations.get_mut(&installation) {
            i.login = login.to_owned();
        }
        for repo in world
            .repos
            .values_mut()
            .filter(|r| r.installation == installation)
        {
            repo.owner = login.to_owned();
        }
    }

    /// A new team of `installation`'s organisation; its id.
    pub fn add_team(&self, installation: i64, slug: &str, secret: bool) -> i64 {
        let mut world = self.shared.world();
        let id = world.new_id();
        let team = directory::Team {
            id,
            slug: slug.to_owned(),
            name: slug.to_owned(),
            parent: None,
            secret,
        };
        world
            .directories
            .entry(installation)
            .or_default()
            .teams
            .insert(id, team);
        id
    }

    /// `n` teams `team-0` … at once (large organisations).
    pub fn add_teams(&self, installation: i64, n: usize) {
        let mut world = self.shared.world();
        for i in 0..n {
            let id = world.new_id();
            let team = directory::Team {
                id,
                slug: format!("team-{i}"),
                name: format!("Team {i}"),
                parent: None,
                secret: false,
            };
            world
                .directories
                .entry(installation)
                .or_default()
                .teams
                .insert(id, team);
        }
    }

    /// Makes `child` a team nested in `parent`.
    pub fn nest_team(&self, installation: i64, child: i64, parent: i64) {
        let mut world = self.shared.world();
        let dir = world.directories.entry(installation).or_default();
        if let Some(team) = dir.teams.get_mut(&child) {
            team.parent = Some(parent);
        }
    }

    /// The team as GitHub has it now.
    pub fn team(&self, installation: i64, id: i64) -> Option<directory::Team> {
        let world = self.shared.world();
        world
            .directories
            .get(&installation)?
            .teams
            .get(&id)
            .cloned()
    }

    /// Renames a team (its slug follows its name, as on GitHub).
    pub fn rename_team(&self, installation: i64, id: i64, slug: &str) {
        let mut world = self.shared.world();
        let dir = world.directories.entry(installation).or_default();
        if let Some(team) = dir.teams.get_mut(&id) {
            team.slug = slug.to_owned();
            team.name = slug.to_owned();
        }
    }

    pub fn delete_team(&self, installation: i64, id: i64) {
        let mut world = self.shared.world();
        if let Some(dir) = world.directories.get_mut(&installation) {
            dir.teams.remove(&id);
        }
    }

    /// A new member of `installation`'s organisation; its id.
    pub fn add_member(&self, installation: i64, login: &str) -> i64 {
        let mut world = self.shared.world();
        let id = world.new_id();
        world
            .directories
            .entry(installation)
            .or_default()
            .members
            .insert(id, login.to_owned());
        id
    }

    /// `n` members `user-0` … at once.
    pub fn add_members(&self, installation: i64, n: usize) {
        let mut world = self.shared.world();
        for i in 0..n {
            let id = world.new_id();
            world
                .directories
                .entry(installation)
                .or_default()
                .members
                .insert(id, format!("user-{i}"));
        }
    }

    pub fn remove_member(&self, installation: i64, id: i64) {
        let mut world = self.shared.world();
        if let Some(dir) = world.directories.get_mut(&installation) {
            dir.members.remove(&id);
        }
    }

    /// Whether the App lacks `members: read` on `installation`.
    pub fn forbid_members(&self, installation: i64, forbidden: bool) {
        let mut world = self.shared.world();
        world.directories.entry(installation).or_default().forbidden = forbidden;
    }

    /// Whether only the member list of `installation` is refused.
    pub fn forbid_member_list(&self, installation: i64, forbidden: bool) {
        let mut world = self.shared.world();
        world
            .directories
            .entry(installation)
            .or_default()
            .members_forbidden = forbidden;
    }

    /// A new repository (branch `main`, one commit without files); its id.
    pub fn add_repo(&self, installation: i64, name: &str) -> i64 {
        self.shared.world().new_repo(installation, name)
    }

    /// A new repository whose head holds `path` with `text`; its id.
    pub fn add_repo_with_file(&self, installation: i64, name: &str, path: &str, text: &str) -> i64 {
        let id = self.add_repo(installation, name);
        self.push_file(id, path, text.as_bytes());
        id
    }

    /// Pushes a commit that sets `path` to `bytes`; the new head sha.
    pub fn push_file(&self, repo: i64, path: &str, bytes: &[u8]) -> String {
        let path = path.to_owned();
        let bytes = bytes.to_vec();
        self.shared.world().commit(repo, move |files| {
            files.insert(path, bytes);
        })
    }

    /// Pushes a commit where `path` is a symbolic link to `target`; the new
    /// head sha.
    pub fn push_symlink(&self, repo: i64, path: &str, target: &str) -> String {
        let sha = self.push_file(repo, path, target.as_bytes());
        self.shared
            .world()
            .symlinks
            .insert((sha.clone(), path.to_owned()));
        sha
    }

    /// Pushes one commit that applies `change` to the head's files (paths
    /// to bytes; a folder is the paths under it); the new head sha.
    pub fn change_files(
        &self,
        repo: i64,
        change: impl FnOnce(&mut std::collections::BTreeMap<String, Vec<u8>>),
    ) -> String {
        self.shared.world().commit(repo, change)
    }

    /// Pushes one commit that applies `change` to `repo`'s head files right
    /// after the next request of `route` is answered (once): the head
    /// moving between two requests of one read.
    pub fn change_files_after(
        &self,
        route: &'static str,
        repo: i64,
        change: impl FnOnce(&mut std::collections::BTreeMap<String, Vec<u8>>) + Send + 'static,
    ) {
        self.shared.world().moves.push(world::Move {
            after: route,
            repo,
            change: Box::new(change),
        });
    }

    /// Makes the Git trees API truncate trees of more than `entries`.
    pub fn set_tree_entry_cap(&self, entries: usize) {
        self.shared.world().tree_entry_cap = entries;
    }

    /// Makes GraphQL answers with more than `entries` tree entries fail as
    /// GitHub fails a query that takes too long (`None`: never).
    pub fn refuse_entries_over(&self, entries: Option<usize>) {
        self.shared.world().refuse_entries_over = entries;
    }

    /// Pushes a commit that deletes `path`; the new head sha.
    pub fn delete_file(&self, repo: i64, path: &str) -> String {
        self.shared.world().commit(repo, |files| {
            files.remove(path);
        })
    }

    pub fn head(&self, repo: i64) -> Option<String> {
        self.shared
            .world()
            .repos
            .get(&repo)
            .and_then(|r| r.head().map(|c| c.sha.clone()))
    }

    pub fn rename_repo(&self, repo: i64, name: &str) {
        if let Some(r) = self.shared.world().repos.get_mut(&repo) {
            r.name = name.to_owned();
        }
    }

    /// Moves a repository to another installation (and its account).
    pub fn transfer_repo(&self, repo: i64, installation: i64) {
        let mut world = self.shared.world();
        let owner = world
            .installations
            .get(&installation)
            .map(|i| i.login.clone())
            .unwrap_or_default();
        if let Some(r) = world.repos.get_mut(&repo) {
            r.installation = installation;
            r.owner = owner;
        }
    }

    pub fn set_default_branch(&self, repo: i64, branch: &str) {
        let mut world = self.shared.world();
        if let Some(r) = world.repos.get_mut(&repo) {
            let head = r.branches.get(&r.default_branch).cloned();
            if let Some(head) = head {
                r.branches.entry(branch.to_owned()).or_insert(head);
            }
            r.default_branch = branch.to_owned();
        }
    }

    pub fn archive_repo(&self, repo: i64, archived: bool) {
        if let Some(r) = self.shared.world().repos.get_mut(&repo) {
            r.archived = archived;
        }
    }

    /// Makes `repo` private or public, as its settings' visibility does.
    pub fn set_private(&self, repo: i64, private: bool) {
        if let Some(r) = self.shared.world().repos.get_mut(&repo) {
            r.private = private;
        }
    }

    pub fn delete_repo(&self, repo: i64) {
        self.shared.world().repos.remove(&repo);
    }

    pub fn suspend_installation(&self, id: i64, suspended: bool) {
        if let Some(i) = self.shared.world().installations.get_mut(&id) {
            i.suspended = suspended;
        }
    }

    /// Uninstalls the App from `id`: its tokens stop working.
    pub fn delete_installation(&self, id: i64) {
        let mut world = self.shared.world();
        if let Some(i) = world.installations.get_mut(&id) {
            i.deleted = true;
        }
        world.tokens.retain(|_, t| t.installation != id);
    }

    /// Gives an installation's REST and GraphQL budgets `limit` requests an
    /// hour, all of it left (GitHub grants large organisations more than
    /// the smallest 5,000).
    pub fn set_budget_limit(&self, installation: i64, limit: u64) {
        let mut world = self.shared.world();
        for resource in ["core", "graphql"] {
            let budget = world.budget(installation, resource);
            budget.limit = limit;
            budget.remaining = limit;
        }
    }

    /// Sets what is left of an installation's REST (`core`) or `graphql` budget.
    pub fn set_remaining(&self, installation: i64, resource: &'static str, remaining: u64) {
        self.shared.world().budget(installation, resource).remaining = remaining;
    }

    /// Sets an installation's whole `resource` budget: the window's limit,
    /// what is left of it, and when it resets (GitHub's windows are an
    /// hour; a test may shorten one).
    pub fn set_budget(
        &self,
        installation: i64,
        resource: &'static str,
        limit: u64,
        remaining: u64,
        reset_in: Duration,
    ) {
        let mut world = self.shared.world();
        let budget = world.budget(installation, resource);
        budget.limit = limit;
        budget.remaining = remaining;
        budget.reset = world::epoch_secs(SystemTime::now() + reset_in);
    }

    /// What is left of an installation's `resource` budget.
    pub fn remaining(&self, installation: i64, resource: &'static str) -> u64 {
        self.shared.world().budget(installation, resource).remaining
    }

    /// How long new installation tokens live.
    pub fn set_token_lifetime(&self, lifetime: Duration) {
        self.shared.world().token_lifetime = lifetime;
    }

    // ---- faults ----

    /// Added to every request before it is answered.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.world().latency = latency;
    }

    pub fn inject(&self, fault: Fault) {
        self.shared.world().faults.push(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.world().faults.clear();
    }

    // ---- counters ----

    /// Requests received for `route` (see [`routes`]).
    pub fn count(&self, route: &str) -> u64 {
        self.shared.world().counts.get(route).copied().unwrap_or(0)
    }

    /// GraphQL requests of every kind: listing pages, batch reads, files
    /// at a commit.
    pub fn graphql_requests(&self) -> u64 {
        self.count(routes::GRAPHQL)
            + self.count(routes::GRAPHQL_READ)
            + self.count(routes::GRAPHQL_FILE)
            + self.count(routes::GRAPHQL_BLOBS)
            + self.count(routes::GRAPHQL_TOUCHED)
    }

    // ---- pull requests and checks ----

    /// A pull request's head: the default branch's files with `path` set to
    /// `bytes`, on a commit of no branch; its sha.
    pub fn pr_commit(&self, repo: i64, path: &str, bytes: &[u8]) -> String {
        let (path, bytes) = (path.to_owned(), bytes.to_vec());
        self.shared.world().side_commit(repo, move |files| {
            files.insert(path, bytes);
        })
    }

    /// A pull request's head: the default branch's files with each
    /// `(path, Some(bytes))` set and each `(path, None)` deleted, on a
    /// commit of no branch whose parent is the default branch's head; its
    /// sha.
    pub fn pr_commit_files(&self, repo: i64, changes: &[(&str, Option<&[u8]>)]) -> String {
        let changes: Vec<(String, Option<Vec<u8>>)> = changes
            .iter()
            .map(|(p, b)| ((*p).to_owned(), b.map(<[u8]>::to_vec)))
            .collect();
        let mut world = self.shared.world();
        let parent = world
            .repos
            .get(&repo)
            .and_then(|r| r.head().map(|c| c.sha.clone()));
        let sha = world.side_commit(repo, move |files| {
            for (path, bytes) in changes {
                match bytes {
                    Some(bytes) => files.insert(path, bytes),
                    None => files.remove(&path),
                };
            }
        });
        if let Some(parent) = parent {
            world.parents.insert(sha.clone(), parent);
        }
        sha
    }

    /// Opens (or moves) pull request `number` of `repo` at head `sha`: its
    /// files list what `sha` changes from its parent.
    pub fn open_pull(&self, repo: i64, number: i64, sha: &str) {
        self.shared
            .world()
            .pulls
            .insert((repo, number), sha.to_owned());
    }

    /// The files of commit `sha` of `repo`, by path.
    pub fn files_at(&self, repo: i64, sha: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
        self.shared
            .world()
            .repos
            .get(&repo)
            .and_then(|r| r.commits.get(sha))
            .map(|c| c.files.clone())
            .unwrap_or_default()
    }

    /// A pull request's head that deletes `path`; its sha.
    pub fn pr_commit_deleting(&self, repo: i64, path: &str) -> String {
        self.shared.world().side_commit(repo, |files| {
            files.remove(path);
        })
    }

    /// A pull request's head where `path` is a symbolic link to `target`.
    pub fn pr_commit_symlink(&self, repo: i64, path: &str, target: &str) -> String {
        let sha = self.pr_commit(repo, path, target.as_bytes());
        self.shared
            .world()
            .symlinks
            .insert((sha.clone(), path.to_owned()));
        sha
    }

    /// Forgets a commit, as a force-push and GitHub's garbage collection do.
    pub fn forget_commit(&self, repo: i64, sha: &str) {
        if let Some(r) = self.shared.world().repos.get_mut(&repo) {
            r.commits.remove(sha);
        }
    }

    /// Takes `checks: write` away from an installation (posts get 403), or
    /// gives it back.
    pub fn forbid_checks(&self, installation: i64, forbidden: bool) {
        let mut world = self.shared.world();
        if forbidden {
            world.checks_forbidden.insert(installation);
        } else {
            world.checks_forbidden.remove(&installation);
        }
    }

    /// Every check run of a repository, oldest first.
    pub fn check_runs(&self, repo: i64) -> Vec<checks::CheckRun> {
        self.shared
            .world()
            .check_runs
            .values()
            .filter(|r| r.repo == repo)
            .cloned()
            .collect()
    }

    /// When each completed check run was created, by (repository, commit):
    /// one look at the world, without copying the runs.
    pub fn completed_runs(&self) -> std::collections::HashMap<(i64, String), Instant> {
        self.shared
            .world()
            .check_runs
            .values()
            .filter(|r| r.status == "completed")
            .map(|r| ((r.repo, r.head_sha.clone()), r.created_at))
            .collect()
    }

    /// The check runs on one commit.
    pub fn check_runs_on(&self, repo: i64, sha: &str) -> Vec<checks::CheckRun> {
        let mut runs = self.check_runs(repo);
        runs.retain(|r| r.head_sha == sha);
        runs
    }

    /// Requests received, all routes together.
    pub fn total(&self) -> u64 {
        self.shared.world().counts.values().sum()
    }

    /// Installation tokens created.
    pub fn token_creations(&self) -> u64 {
        self.count(routes::ACCESS_TOKENS)
    }

    /// The installation tokens handed out and still known (secrets a test
    /// may look for in logs).
    pub fn issued_tokens(&self) -> Vec<String> {
        self.shared.world().tokens.keys().cloned().collect()
    }

    /// `304 Not Modified` answers sent.
    pub fn not_modified(&self) -> u64 {
        self.shared.world().not_modified
    }

    pub fn reset_counts(&self) {
        let mut world = self.shared.world();
        world.counts.clear();
        world.log.clear();
        world.not_modified = 0;
    }

    /// Every authenticated request so far, with its arrival time, route,
    /// installation and answer, in the order they were answered.
    pub fn log(&self) -> Vec<Logged> {
        self.shared.world().log.clone()
    }
}

/// Which route a request is, with its path parameters.
fn classify(method: &Method, path: &str) -> Option<(&'static str, Vec<String>)> {
    if method == Method::POST && (path == "/graphql" || path == "/api/graphql") {
        return Some((routes::GRAPHQL, Vec::new()));
    }
    let path = path.strip_prefix("/api/v3").unwrap_or(path);
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let route = match (method.as_str(), s.as_slice()) {
        ("GET", ["app", "installations"]) => routes::INSTALLATIONS,
        ("POST", ["app", "installations", _, "access_tokens"]) => routes::ACCESS_TOKENS,
        ("GET", ["app", "hook", "deliveries"]) => routes::HOOK_DELIVERIES,
        ("POST", ["app", "hook", "deliveries", _, "attempts"]) => routes::HOOK_ATTEMPTS,
        ("GET", ["repositories", _]) => routes::REPO_BY_ID,
        ("GET", ["repositories", _, "pulls", _, "files"]) => routes::PULL_FILES,
        ("GET", ["repos", _, _, "pulls", _, "files"]) => routes::PULL_FILES,
        ("POST", ["repos", _, _, "check-runs"]) => routes::CHECK_RUN_CREATE,
        ("PATCH", ["repos", _, _, "check-runs", _]) => routes::CHECK_RUN_UPDATE,
        ("GET", ["repos", _, _, "commits", _, "check-runs"]) => routes::CHECK_RUNS_FOR_REF,
        ("GET", ["repos", _, _]) => routes::REPO,
        ("GET", ["repos", _, _, "commits", _, ..]) => routes::COMMIT,
        ("GET", ["repos", _, _, "contents", _, ..]) => routes::CONTENTS,
        ("GET", ["repos", _, _, "git", "trees", _]) => routes::GIT_TREE,
        _ => return None,
    };
    Some((route, segments))
}

fn percent_decode(segment: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let mut late = None;
    let response = answer_request(shared, request, &mut late).await;
    if let Some(wait) = late {
        tokio::time::sleep(wait).await;
    }
    response
}

/// Answers one request; `late` is set when the answer must wait (after
/// the work is done).
async fn answer_request(
    shared: Arc<Shared>,
    request: Request,
    late: &mut Option<Duration>,
) -> Response {
    let arrived = Instant::now();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 32 * 1024 * 1024)
        .await
        .unwrap_or_default();
    if let Some(response) = manifest::answer(&shared, &parts.method, &parts.uri, &body) {
        return response;
    }
    let Some((route, segments)) = classify(&parts.method, parts.uri.path()) else {
        return respond(Answer::not_found(), &[]);
    };
    let graphql_request: Option<Value> = if route == routes::GRAPHQL {
        serde_json::from_slice(&body).ok()
    } else {
        None
    };
    let page = graphql_request.as_ref().and_then(graphql::page_of);
    let is_read = graphql_request
        .as_ref()
        .and_then(|r| r.get("query")?.as_str())
        .is_some_and(graphql::is_read);
    let is_file = graphql_request
        .as_ref()
        .and_then(|r| r.get("query")?.as_str())
        .is_some_and(graphql::is_file_at_commit);
    let is_directory = graphql_request
        .as_ref()
        .and_then(|r| r.get("query")?.as_str())
        .is_some_and(directory::is_directory);
    let page = if route == routes::GRAPHQL && is_directory {
        graphql_request.as_ref().map(directory::page_of)
    } else {
        page
    };
    let is_blobs = graphql_request
        .as_ref()
        .and_then(|r| r.get("query")?.as_str())
        .is_some_and(trees::is_blobs);
    let is_touched = graphql_request
        .as_ref()
        .and_then(|r| r.get("query")?.as_str())
        .is_some_and(touched::is_touched);
    let route = if route == routes::GRAPHQL && is_touched {
        routes::GRAPHQL_TOUCHED
    } else if route == routes::GRAPHQL && is_blobs {
        routes::GRAPHQL_BLOBS
    } else if route == routes::GRAPHQL && is_directory {
        routes::GRAPHQL_DIRECTORY
    } else if route == routes::GRAPHQL && is_read {
        routes::GRAPHQL_READ
    } else if route == routes::GRAPHQL && is_file {
        routes::GRAPHQL_FILE
    } else {
        route
    };

    let (latency, fault) = {
        let mut world = shared.world();
        *world.counts.entry(route.to_owned()).or_default() += 1;
        let fault = world
            .faults
            .iter_mut()
            .find(|f| f.matches(route, page))
            .map(|f| {
                if f.times != u32::MAX {
                    f.times -= 1;
                }
                f.kind.clone()
            });
        world.faults.retain(|f| f.times > 0);
        (world.latency, fault)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }

    let caller = match authenticate(&shared, route, &parts.headers) {
        Ok(caller) => caller,
        Err(answer) => return respond(answer, &[]),
    };
    let resource = if is_graphql(route) { "graphql" } else { "core" };

    if let Some(FaultKind::LateAnswer(wait)) = &fault {
        *late = Some(*wait);
    }
    let mut answer = match fault {
        Some(FaultKind::Slow(wait)) => {
            tokio::time::sleep(wait).await;
            None
        }
        Some(FaultKind::LateAnswer(_)) => None,
        Some(kind) => Some(fault_answer(&kind, caller)),
        None => None,
    };
    let installation = match caller {
        Caller::Installation(id) => Some(id),
        Caller::App => None,
    };
    let logged = |status| Logged {
        at: arrived,
        route,
        installation,
        status,
    };
    if matches!(answer.as_ref(), Some(a) if a.status == 0) {
        shared.world().log.push(logged(0));
        return broken_connection();
    }

    let mut world = shared.world();
    // The installation's budget: spent by every answer except a 304.
    let budget = match caller {
        Caller::Installation(id) => {
            let budget = world.budget(id, resource);
            if budget.reset <= epoch_secs(SystemTime::now()) {
                budget.remaining = budget.limit;
                budget.reset = epoch_secs(SystemTime::now()) + 3600;
            }
            if budget.remaining == 0 && answer.is_none() {
                answer = Some(Answer::message(
                    403,
                    &format!("API rate limit exceeded for installation ID {id}."),
                ));
            }
            Some(*budget)
        }
        Caller::App => None,
    };
    let mut answer = match (answer, caller) {
        (Some(answer), _) => answer,
        (None, Caller::Installation(id)) if checks::is_route(route) => checks::answer(
            &mut world,
            id,
            route,
            &segments,
            parts.uri.query().unwrap_or(""),
            &body,
        ),
        (None, _) => dispatch(
            &mut world,
            &shared.base,
            route,
            &segments,
            &parts,
            caller,
            graphql_request.as_ref(),
            budget,
        ),
    };

    // Conditional GETs.
    if parts.method == Method::GET && answer.status == 200 {
        let tag = rest::etag(&answer.body);
        let matches = parts
            .headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok())
            == Some(tag.as_str());
        answer.headers.push(("etag".into(), tag));
        if matches {
            world.not_modified += 1;
            answer.status = 304;
            answer.body.clear();
        }
    }

    let rate_headers = match (caller, budget) {
        (Caller::Installation(id), Some(_)) => {
            let budget = world.budget(id, resource);
            if answer.status != 304 {
                budget.remaining = budget.remaining.saturating_sub(1);
            }
            let b = *budget;
            vec![
                ("x-ratelimit-limit".to_owned(), b.limit.to_string()),
                ("x-ratelimit-remaining".to_owned(), b.remaining.to_string()),
                (
                    "x-ratelimit-used".to_owned(),
                    (b.limit - b.remaining).to_string(),
                ),
                ("x-ratelimit-reset".to_owned(), b.reset.to_string()),
                ("x-ratelimit-resource".to_owned(), resource.to_owned()),
            ]
        }
        _ => vec![
            ("x-ratelimit-limit".to_owned(), "5000".to_owned()),
            ("x-ratelimit-remaining".to_owned(), "4999".to_owned()),
            ("x-ratelimit-used".to_owned(), "1".to_owned()),
            (
                "x-ratelimit-reset".to_owned(),
                (epoch_secs(SystemTime::now()) + 3600).to_string(),
            ),
            ("x-ratelimit-resource".to_owned(), "core".to_owned()),
        ],
    };
    world.log.push(logged(answer.status));
    // The answer is decided: a head that moves now moves after it.
    if let Some(at) = world.moves.iter().position(|m| m.after == route) {
        let moved = world.moves.remove(at);
        world.commit(moved.repo, moved.change);
    }
    respond(answer, &rate_headers)
}

fn authenticate(shared: &Shared, route: &str, headers: &HeaderMap) -> Result<Caller, Answer> {
    let credentials = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("token "))
        })
        .map(str::to_owned);
    let Some(credentials) = credentials else {
        return Err(Answer::message(401, "Requires authentication"));
    };
    if route == routes::INSTALLATIONS
        || route == routes::ACCESS_TOKENS
        || hook_deliveries::is_app_route(route)
    {
        let app_id = shared.world().app_id;
        return match jwt::verify(&credentials, &shared.key, app_id) {
            Ok(()) => Ok(Caller::App),
            Err(message) => Err(Answer::message(401, &message)),
        };
    }
    let world = shared.world();
    let Some(token) = world
        .tokens
        .get(&credentials)
        .filter(|t| t.expires_at > SystemTime::now())
    else {
        return Err(Answer::message(401, "Bad credentials"));
    };
    match world.installations.get(&token.installation) {
        Some(i) if i.deleted => Err(Answer::message(401, "Bad credentials")),
        Some(i) if i.suspended => Err(Answer::message(403, "This installation has been suspended")),
        Some(i) => Ok(Caller::Installation(i.id)),
        None => Err(Answer::message(401, "Bad credentials")),
    }
}

#[allow(clippy::too_many_arguments)]
fn dispatch(
    world: &mut World,
    base: &str,
    route: &str,
    segments: &[String],
    parts: &axum::http::request::Parts,
    caller: Caller,
    graphql_request: Option<&Value>,
    budget: Option<world::Budget>,
) -> Answer {
    let query = parts.uri.query().unwrap_or("");
    let installation = match caller {
        Caller::Installation(id) => id,
        Caller::App => match route {
            r if r == routes::INSTALLATIONS => return rest::installations(world, base, query),
            r if r == routes::ACCESS_TOKENS => {
                return match segments.get(2).and_then(|s| s.parse().ok()) {
                    Some(id) => rest::access_token(world, id),
                    None => Answer::not_found(),
                }
            }
            r if hook_deliveries::is_app_route(r) => {
                return hook_deliveries::answer(
                    &world.hook_log,
                    base,
                    r,
                    segments,
                    parts.uri.path(),
                    query,
                )
            }
            _ => return Answer::message(401, "A JSON web token cannot be used for this route"),
        },
    };
    if is_graphql(route) {
        return match (graphql_request, budget) {
            (Some(request), Some(budget)) if route == routes::GRAPHQL_DIRECTORY => {
                directory::answer(world, installation, request, budget)
            }
            (Some(request), Some(budget)) if route == routes::GRAPHQL_TOUCHED => {
                touched::answer(world, installation, request, budget)
            }
            (Some(request), Some(_)) if route == routes::GRAPHQL_BLOBS => {
                let query = request
                    .get("query")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                trees::blobs(world, installation, query)
            }
            (Some(request), Some(budget)) => graphql::answer(world, installation, request, budget),
            _ => Answer::message(400, "Problems parsing JSON"),
        };
    }
    if route == routes::REPO_BY_ID {
        let id = segments.get(1).and_then(|s| s.parse::<i64>().ok());
        return match id.and_then(|id| rest::visible_by_id(world, installation, id)) {
            Some(repo) => Answer::json(200, rest::repo_json(base, repo)),
            None => Answer::not_found(),
        };
    }
    if route == routes::PULL_FILES {
        let repo = match segments.first().map(String::as_str) {
            Some("repositories") => segments
                .get(1)
                .and_then(|s| s.parse::<i64>().ok())
                .and_then(|id| rest::visible_by_id(world, installation, id)),
            _ => rest::visible_by_name(
                world,
                installation,
                segments.get(1).map(String::as_str).unwrap_or(""),
                segments.get(2).map(String::as_str).unwrap_or(""),
            ),
        };
        return match (repo, pulls::number(segments)) {
            (Some(repo), Some(number)) => pulls::answer(world, base, repo, number, query),
            _ => Answer::not_found(),
        };
    }
    let (owner, name) = (
        segments.get(1).map(String::as_str).unwrap_or(""),
        segments.get(2).map(String::as_str).unwrap_or(""),
    );
    let Some(repo) = rest::visible_by_name(world, installation, owner, name) else {
        return Answer::not_found();
    };
    let rest_of_path = segments.get(4..).map(|s| s.join("/")).unwrap_or_default();
    match route {
        r if r == routes::REPO => Answer::json(200, rest::repo_json(base, repo)),
        r if r == routes::COMMIT => {
            let sha_only = parts
                .headers
                .get("accept")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("application/vnd.github.sha"));
            rest::commit(repo, &rest_of_path, sha_only)
        }
        r if r == routes::GIT_TREE => {
            let recursive = url::form_urlencoded::parse(query.as_bytes())
                .any(|(k, v)| k == "recursive" && v == "1");
            trees::git_tree(
                world,
                repo,
                segments.get(5).map_or("", String::as_str),
                recursive,
            )
        }
        r if r == routes::CONTENTS => {
            let reference = url::form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == "ref")
                .map(|(_, v)| v.into_owned());
            rest::contents(base, repo, &rest_of_path, reference.as_deref())
        }
        _ => Answer::not_found(),
    }
}

/// What a fault answers; status 0 stands for a dropped connection.
fn fault_answer(kind: &FaultKind, caller: Caller) -> Answer {
    match kind {
        FaultKind::ServerError => Answer::message(500, "Internal Server Error"),
        FaultKind::BadGateway => Answer::message(502, "Server Error"),
        FaultKind::SecondaryRateLimit { retry_after } => {
            // GitHub's body, its request id aside.
            let mut answer = Answer::json(
                403,
                serde_json::json!({
                    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
                }),
            );
            answer
                .headers
                .push(("retry-after".into(), retry_after.to_string()));
            answer
        }
        FaultKind::TooManyRequests { retry_after } => {
            let mut answer = Answer::message(429, "Too Many Requests");
            answer
                .headers
                .push(("retry-after".into(), retry_after.to_string()));
            answer
        }
        FaultKind::Garbage => Answer {
            status: 200,
            content_type: "application/json; charset=utf-8",
            body: b"{\"id\": 12, \"name\": <html>oops".to_vec(),
            headers: Vec::new(),
        },
        FaultKind::GraphqlRateLimited => {
            let id = match caller {
                Caller::Installation(id) => id,
                Caller::App => 0,
            };
            graphql::rate_limited(id)
        }
        FaultKind::Close => Answer {
            status: 0,
            content_type: "",
            body: Vec::new(),
            headers: Vec::new(),
        },
        FaultKind::Slow(_) | FaultKind::LateAnswer(_) => {
            Answer::message(500, "unreachable: slow answers are delayed, not replaced")
        }
    }
}

fn respond(answer: Answer, rate_headers: &[(String, String)]) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::builder().status(status);
    if !answer.content_type.is_empty() && status != StatusCode::NOT_MODIFIED {
        response = response.header("content-type", answer.content_type);
    }
    for (name, value) in answer.headers.iter().chain(rate_headers) {
        if let Ok(value) = HeaderValue::from_str(value) {
            response = response.header(name.as_str(), value);
        }
    }
    response
        .body(Body::from(answer.body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// Starts an answer, then fails its body: the connection is dropped.
fn broken_connection() -> Response {
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"{\"partial\": ")),
        Err(std::io::Error::other("connection closed")),
    ];
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Body::from_stream(futures_util::stream::iter(chunks)))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}
