//! The `Roster` check with several project files (`ROSTER_PROJECT_FILES`
//! with patterns), end to end in process: a pull request's changed files
//! listed by the fake GitHub (paged like GitHub), only the touched
//! project files read at its head (all in one GraphQL query) and
//! previewed together; and the default
//! branch's run posted only when a matching file changed, naming it.

use crate::checks::{env, Env, ACME};
use crate::support::fake_github::routes;
use crate::support::registry::installed_repo;

use roster::controller::Handler;
use roster::project::ProjectFiles;
use roster::source::{FileContent, FileState, Observed, PathFile, RepoId};

const PATTERN: &str = "services/*/project.yaml";

fn service(name: &str) -> String {
    format!("services/{name}/project.yaml")
}

fn entry(name: &str, owner: &str) -> String {
    format!("name: svc-{name}\nowner: team-{owner}\n")
}

/// The checks environment previewing `services/*/project.yaml`.
async fn several() -> Env {
    let mut env = env().await;
    let files = ProjectFiles::parse(PATTERN).expect("pattern");
    env.worker = env.worker.clone().with_files(files);
    env
}

/// Reconciles `repo` at its head as a source reading every matching
/// file would see it; the outcome.
async fn reconcile_files(env: &Env, repo: i64, name: &str) -> &'static str {
    let patterns = ProjectFiles::parse(PATTERN).expect("pattern");
    let sha = env.fake.head(repo).expect("a head");
    let files: Vec<PathFile> = env
        .fake
        .files_at(repo, &sha)
        .into_iter()
        .filter(|(path, _)| patterns.matches(path))
        .map(|(path, bytes)| PathFile {
            path,
            content: FileContent::Bytes(bytes),
        })
        .collect();
    let observed = Observed::Present {
        repo: installed_repo("acme", name, ACME),
        file: FileState::Files { sha, files },
    };
    env.handler
        .apply(&RepoId(repo), Ok(observed))
        .await
        .unwrap_or("failed")
}

/// `acme/{name}` with services a to e, one entry each, reconciled.
async fn monorepo(env: &Env, name: &str) -> i64 {
    let repo = env.fake.add_repo(ACME, name);
    for s in ["a", "b", "c", "d", "e"] {
        env.fake
            .push_file(repo, &service(s), entry(s, s).as_bytes());
    }
    assert_eq!(reconcile_files(env, repo, name).await, "synced");
    env.quiet().await;
    repo
}

async fn open(env: &Env, repo: i64, name: &str, number: i64, sha: &str) {
    env.fake.open_pull(repo, number, sha);
    env.open_pr(repo, name, number, sha).await;
    env.settle().await;
}

#[tokio::test]
async fn a_pull_request_touching_two_of_five_files_should_preview_both_and_their_conflict() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let a = "projects:\n  - name: svc-a\n    owner: team-new\n  - name: shared\n    owner: t\n";
    let b = "projects:\n  - name: svc-b\n    owner: team-b\n  - name: shared\n    owner: t\n";
    let (a_path, b_path) = (service("a"), service("b"));
    let sha = env.fake.pr_commit_files(
        repo,
        &[
            (&a_path, Some(a.as_bytes())),
            (&b_path, Some(b.as_bytes())),
            ("README.md", Some(b"hello\n")),
        ],
    );
    open(&env, repo, "mono", 5, &sha).await;
    let run = env.only_run(repo, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("1 problem"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("This commit touches 2 project files"),
        "{summary}"
    );
    assert!(
        summary.contains("- `services/a/project.yaml`: 2 entries"),
        "{summary}"
    );
    assert!(
        summary.contains("- `services/b/project.yaml`: 2 entries, 1 name taken"),
        "{summary}"
    );
    assert!(
        summary.contains("owner: `team-a` → `team-new`"),
        "{summary}"
    );
    assert!(summary.contains("- **shared**"), "{summary}");
    assert!(
        !summary.contains("svc-c"),
        "untouched files stay out: {summary}"
    );
    assert_eq!(run.annotations.len(), 1);
    let note = &run.annotations[0];
    assert_eq!(note["path"], "services/b/project.yaml");
    assert_eq!(note["start_line"], 4);
    assert_eq!(
        note["message"],
        "projects[1].name: \"shared\" is also declared in services/a/project.yaml"
    );
    // One listing of the changed files, the two touched files read together.
    assert_eq!(env.fake.count(routes::PULL_FILES), 1);
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 1);
}

#[tokio::test]
async fn a_pull_request_touching_five_files_should_read_them_in_one_query() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let (a, b, c, d, e) = (
        service("a"),
        service("b"),
        service("c"),
        service("d"),
        service("e"),
    );
    let b_text =
        "projects:\n  - name: svc-b\n    owner: team-b\n  - name: svc-b2\n    owner: team-b\n";
    let sha = env.fake.pr_commit_files(
        repo,
        &[
            (&a, Some(entry("a", "new").as_bytes())),
            (&b, Some(b_text.as_bytes())),
            (&c, Some(b"name: svc-c\nowner: ''\n")),
            (&d, Some(b"name: svc-d\0\xff\n")),
            (&e, Some(b"name: svc-e\nowner: team-e\ndescription: five\n")),
            ("README.md", Some(b"hello\n")),
        ],
    );
    open(&env, repo, "mono", 10, &sha).await;
    let run = env.only_run(repo, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.title.as_deref(), Some("2 problems"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("This commit touches 5 project files"),
        "{summary}"
    );
    assert!(
        summary.contains("owner: `team-a` → `team-new`"),
        "{summary}"
    );
    assert!(summary.contains("svc-b2"), "{summary}");
    let mut notes: Vec<(String, String)> = run
        .annotations
        .iter()
        .map(|n| {
            let field = |k: &str| n[k].as_str().unwrap_or_default().to_owned();
            (field("path"), field("message"))
        })
        .collect();
    notes.sort();
    assert_eq!(
        notes,
        [
            (c.clone(), "owner: must not be empty".to_owned()),
            (
                d.clone(),
                "file: is binary or not UTF-8 text (GitHub shows no text for it)".to_owned()
            ),
        ],
        "{summary}"
    );
    // Exactly, as the installation: the listing of the changed paths, one
    // GraphQL query for the five files at the head, one REST read of the
    // file GitHub calls binary (its bytes are not text beyond the NUL),
    // and the run posted (the App's own request for the installation's
    // token aside).
    let mut asked: Vec<&str> = env
        .fake
        .log()
        .iter()
        .filter(|l| l.installation == Some(ACME))
        .map(|l| l.route)
        .collect();
    asked.sort_unstable();
    assert_eq!(
        asked,
        [
            routes::CONTENTS,
            routes::PULL_FILES,
            routes::GRAPHQL_FILE,
            routes::CHECK_RUN_CREATE,
        ],
        "{summary}"
    );
}

#[tokio::test]
async fn a_pull_request_removing_a_file_should_show_its_entries_removed() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let sha = env.fake.pr_commit_files(repo, &[(&service("c"), None)]);
    open(&env, repo, "mono", 6, &sha).await;
    let run = env.only_run(repo, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 0, removes 1"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("- `services/c/project.yaml`: removed"),
        "{summary}"
    );
    assert!(
        summary.contains("**Merging removes 1 entry from the registry: svc-c.**"),
        "{summary}"
    );
    // GitHub's listing says it is removed: nothing to read at the head.
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 0);
}

#[tokio::test]
async fn a_moved_file_should_be_a_changed_path_and_no_file_touched_a_plain_success() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let text = entry("d", "d");
    let sha = env.fake.pr_commit_files(
        repo,
        &[
            (&service("d"), None),
            (&service("d2"), Some(text.as_bytes())),
        ],
    );
    open(&env, repo, "mono", 7, &sha).await;
    let run = env.only_run(repo, &sha);
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 1, removes 0"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("path: `services/d/project.yaml` → `services/d2/project.yaml`"),
        "{summary}"
    );
    // A rename: the new path read, the old one known to be gone.
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 1);

    env.fake.reset_counts();
    let readme = env
        .fake
        .pr_commit_files(repo, &[("README.md", Some(b"x\n"))]);
    open(&env, repo, "mono", 8, &readme).await;
    let run = env.only_run(repo, &readme);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 0, removes 0"));
    assert_eq!(env.fake.count(routes::GRAPHQL_FILE), 0, "nothing to read");
}

#[tokio::test]
async fn a_long_list_of_changed_files_should_be_followed_page_by_page() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let paths: Vec<String> = (0..150).map(|k| format!("docs/page-{k:03}.md")).collect();
    let broken = "name: svc-e\nowner: ''\n";
    let mut changes: Vec<(&str, Option<&[u8]>)> = paths
        .iter()
        .map(|p| (p.as_str(), Some(&b"x\n"[..])))
        .collect();
    let e = service("e");
    changes.push((&e, Some(broken.as_bytes())));
    let sha = env.fake.pr_commit_files(repo, &changes);
    open(&env, repo, "mono", 9, &sha).await;
    // 151 files: two pages of 100, the project file on the second.
    assert_eq!(env.fake.count(routes::PULL_FILES), 2);
    let run = env.only_run(repo, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    assert_eq!(run.annotations[0]["path"], "services/e/project.yaml");
    assert_eq!(run.annotations[0]["message"], "owner: must not be empty");
}

#[tokio::test]
async fn the_default_branch_should_get_a_run_only_when_a_project_file_changed() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let readme = env.fake.push_file(repo, "README.md", b"docs\n");
    assert_eq!(reconcile_files(&env, repo, "mono").await, "synced");
    env.settle().await;
    assert!(
        env.fake.check_runs_on(repo, &readme).is_empty(),
        "no project file changed: no run"
    );

    let changed = env
        .fake
        .push_file(repo, &service("b"), entry("b", "new").as_bytes());
    assert_eq!(reconcile_files(&env, repo, "mono").await, "synced");
    env.settle().await;
    let run = env.only_run(repo, &changed);
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    assert_eq!(run.title.as_deref(), Some("adds 0, changes 1, removes 0"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("This commit touches 1 project file:"),
        "{summary}"
    );
    assert!(
        summary.contains("- `services/b/project.yaml`: 1 entry"),
        "{summary}"
    );
    assert!(!summary.contains("services/a"), "{summary}");

    let removed = env.fake.delete_file(repo, &service("a"));
    let broken = env.fake.push_file(repo, &service("c"), b"name: [\n");
    assert_ne!(removed, broken);
    assert_eq!(reconcile_files(&env, repo, "mono").await, "invalid");
    env.settle().await;
    let run = env.only_run(repo, &broken);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    let summary = run.summary.unwrap_or_default();
    assert!(
        summary.contains("- `services/a/project.yaml`: removed"),
        "{summary}"
    );
    assert!(
        summary.contains("- `services/c/project.yaml`: 1 problem"),
        "{summary}"
    );
    assert_eq!(run.annotations[0]["path"], "services/c/project.yaml");
}

#[tokio::test]
async fn each_page_of_changed_files_should_take_its_own_share_of_the_budget() {
    let mut env = several().await;
    env.worker.budget.reserve = true;
    let repo = monorepo(&env, "mono").await;
    // REST keeps 200 of 400 for the sync, and one more is left above it.
    env.fake
        .set_budget(ACME, "core", 400, 201, std::time::Duration::from_secs(3600));
    let paths: Vec<String> = (0..150).map(|k| format!("docs/page-{k:03}.md")).collect();
    let changes: Vec<(&str, Option<&[u8]>)> = paths
        .iter()
        .map(|p| (p.as_str(), Some(&b"x\n"[..])))
        .collect();
    let sha = env.fake.pr_commit_files(repo, &changes);
    open(&env, repo, "mono", 9, &sha).await;
    // The first page learns the budget; the second waits for the reset.
    assert_eq!(env.fake.count(routes::PULL_FILES), 1);
    assert_eq!(env.fake.remaining(ACME, "core"), 200);
    assert!(env.fake.check_runs_on(repo, &sha).is_empty());
    let waiting: i64 = sqlx::query_scalar("select count(*) from check_requests")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(waiting, 1, "the evaluation waits for the reset");
}

/// A NUL at line 3, column 7.
const NUL_AT_3_7: &[u8] = b"name: svc-a\nowner: team-a\ndescri\0ption: x\n";

#[tokio::test]
async fn a_nul_in_a_touched_file_should_be_annotated_at_its_line_and_column() {
    let env = several().await;
    let repo = monorepo(&env, "mono").await;
    let a = service("a");
    let sha = env.fake.pr_commit_files(repo, &[(&a, Some(NUL_AT_3_7))]);
    open(&env, repo, "mono", 11, &sha).await;
    let run = env.only_run(repo, &sha);
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    let summary = run.summary.clone().unwrap_or_default();
    let message = "file: contains a NUL character (U+0000), which a project file may not hold";
    assert!(
        summary.contains(&format!("{a}:3:7: {message}")),
        "{summary}"
    );
    assert_eq!(run.annotations.len(), 1, "{:?}", run.annotations);
    let note = &run.annotations[0];
    assert_eq!(note["path"], a.as_str());
    assert_eq!(
        (note["start_line"].as_u64(), note["start_column"].as_u64()),
        (Some(3), Some(7))
    );
    assert_eq!(env.fake.count(routes::CONTENTS), 1, "one read of the bytes");
}

#[tokio::test]
async fn the_read_of_a_nul_files_bytes_should_take_its_share_of_the_budget() {
    let mut env = several().await;
    env.worker.budget.reserve = true;
    let repo = monorepo(&env, "mono").await;
    // REST keeps 200 of 400 for the sync, and one more is left above it:
    // the listing of the changed paths takes it, the read must wait.
    env.fake
        .set_budget(ACME, "core", 400, 201, std::time::Duration::from_secs(3600));
    let sha = env
        .fake
        .pr_commit_files(repo, &[(&service("a"), Some(NUL_AT_3_7))]);
    open(&env, repo, "mono", 12, &sha).await;
    assert_eq!(env.fake.count(routes::PULL_FILES), 1);
    assert_eq!(
        env.fake.count(routes::CONTENTS),
        0,
        "no read past the share"
    );
    assert!(env.fake.check_runs_on(repo, &sha).is_empty());
    let waiting: i64 = sqlx::query_scalar("select count(*) from check_requests")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(waiting, 1, "the evaluation waits for the reset");
}
