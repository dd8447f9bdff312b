//! The real server reading several project files per repository from the
//! fake GitHub (installation 1, `acme`), with what the tests of patterns
//! ask of it: a repository's JSON once it satisfies a check, an entry,
//! and the names of a repository's entries.

use std::time::Duration;

use serde_json::Value;

use super::fake_github::{routes, FakeGithub, APP_ID, PRIVATE_KEY};
use super::github_app::server_env;
use super::http::get;
use super::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(60);

/// A service file declaring `name`.
pub fn yaml(name: &str) -> Vec<u8> {
    format!("name: {name}\nowner: team-{name}\n").into_bytes()
}

pub struct Env {
    pub fake: FakeGithub,
    pub roster: Roster,
    _dir: tempfile::TempDir,
}

impl Env {
    /// The server on a fresh database, `ROSTER_PROJECT_FILES` = `patterns`.
    pub async fn start(fake: FakeGithub, patterns: &str) -> Env {
        let (_pool, url) = roster::db::testing::fresh_database()
            .await
            .expect("test database");
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env = server_env(
            APP_ID,
            PRIVATE_KEY,
            fake.api_url().as_str(),
            fake.graphql_url().as_str(),
            &url,
        );
        env.push(("ROSTER_PROJECT_FILES", patterns.to_owned()));
        let roster = Roster::start(&env, dir.path()).await;
        Env {
            fake,
            roster,
            _dir: dir,
        }
    }

    pub async fn repo(&self, name: &str) -> Option<Value> {
        let answer = get(&self.roster.url(&format!("/api/v1/repos/acme/{name}")))
            .await
            .ok()?;
        answer.status.is_success().then(|| answer.json())
    }

    /// `acme/{name}` once `check` holds.
    pub async fn repo_until(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        eventually(&format!("{name}: {what}"), LIMIT, || async {
            self.repo(name).await.filter(|r| check(r))
        })
        .await
    }

    pub async fn project(&self, name: &str) -> Value {
        get(&self.roster.url(&format!("/api/v1/projects/{name}")))
            .await
            .expect("project")
            .json()
    }

    /// The change history of entry `name`, newest first.
    pub async fn history(&self, name: &str) -> Value {
        get(&self.roster.url(&format!("/api/v1/projects/{name}/history")))
            .await
            .expect("history")
            .json()
    }

    /// Requests that read one repository over REST.
    pub fn rest_reads(&self) -> u64 {
        [routes::REPO_BY_ID, routes::COMMIT, routes::CONTENTS]
            .iter()
            .map(|r| self.fake.count(r))
            .sum()
    }
}

/// The names of a repository's entries, as its JSON lists them.
pub fn names(repo: &Value) -> Vec<String> {
    repo["projects"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
