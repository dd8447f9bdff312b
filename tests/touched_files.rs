//! A push's partial read applied by the registry's handler on real
//! PostgreSQL: only the touched files change, the others' entries stay as
//! recorded, a removed file's entries go, a move between touched paths is
//! `changed`; and whenever the partial read no longer applies (the
//! registry moved past the push's `before`, a touched file names what an
//! untouched one holds, the status is not `synced`) nothing is written and
//! the repository is queued for a full read.

use crate::support;

use roster::controller::{Handler, WorkQueue};
use roster::project::ProjectFiles;
use roster::registry::changes::{self, ChangeKind};
use roster::registry::{get_project, get_repo, RegistryHandler};
use roster::source::{FileContent, FileState, Observed, PathFile, RepoId, TouchedFiles};
use sqlx::PgPool;
use support::registry::{handler, installed_repo, queue};

const PATTERNS: &str = "services/*/project.yaml";
const ID: RepoId = RepoId(1);

fn file(path: &str, name: &str, description: &str) -> PathFile {
    PathFile {
        path: path.to_owned(),
        content: FileContent::Bytes(
            format!("name: {name}\nowner: team-{name}\ndescription: {description}\n").into_bytes(),
        ),
    }
}

fn service(s: &str, description: &str) -> PathFile {
    file(&format!("services/{s}/project.yaml"), s, description)
}

fn present(file: FileState) -> Observed {
    Observed::Present {
        repo: installed_repo("acme", "mono", 1),
        file,
    }
}

fn touched(before: &str, sha: &str, files: Vec<PathFile>, gone: &[&str]) -> Observed {
    present(FileState::Touched(Box::new(TouchedFiles {
        before: before.to_owned(),
        sha: sha.to_owned(),
        files,
        gone: gone.iter().map(|p| (*p).to_owned()).collect(),
    })))
}

struct Fixture {
    pool: PgPool,
    handler: RegistryHandler,
    queue: std::sync::Arc<roster::db::queue::PgQueue>,
}

/// A repository synced at `a` with services `a`, `b` and `c`.
async fn synced() -> Fixture {
    let (pool, _url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let queue = queue(&pool);
    let files = ProjectFiles::parse(PATTERNS).expect("patterns");
    let handler = handler(&pool, queue.clone()).with_project_files(&files);
    let all = vec![service("a", "v0"), service("b", "v0"), service("c", "v0")];
    let full = present(FileState::Files {
        sha: "a".repeat(40),
        files: all,
    });
    assert_eq!(handler.apply(&ID, Ok(full)).await, Ok("synced"));
    Fixture {
        pool,
        handler,
        queue,
    }
}

/// Each entry among `a`, `b`, `c` as `(name, path, first letter of
/// source_sha, description)`.
async fn entries(pool: &PgPool) -> Vec<(String, String, String, String)> {
    let mut rows = Vec::new();
    for name in ["a", "b", "c"] {
        if let Some(entry) = get_project(pool, name).await.expect("entry") {
            let description = entry.fields.description.unwrap_or_default();
            rows.push((
                entry.name,
                entry.path,
                entry.source_sha[..1].to_owned(),
                description,
            ));
        }
    }
    rows
}

async fn synced_sha(pool: &PgPool) -> String {
    let repo = get_repo(pool, "acme", "mono")
        .await
        .expect("read")
        .expect("the repository");
    repo.repo.synced_sha.unwrap_or_default()
}

fn row(name: &str, sha: &str, description: &str) -> (String, String, String, String) {
    (
        name.to_owned(),
        format!("services/{name}/project.yaml"),
        sha.to_owned(),
        description.to_owned(),
    )
}

#[tokio::test]
async fn a_partial_read_should_change_only_the_touched_files() {
    let f = synced().await;
    let b = "b".repeat(40);
    let push = touched(
        &"a".repeat(40),
        &b,
        vec![service("b", "v1")],
        &["services/c/project.yaml"],
    );
    assert_eq!(f.handler.apply(&ID, Ok(push)).await, Ok("synced"));
    assert_eq!(synced_sha(&f.pool).await, b);
    assert_eq!(
        entries(&f.pool).await,
        [row("a", "a", "v0"), row("b", "b", "v1")],
        "a untouched, b changed, c's file removed"
    );

    // A move between touched paths keeps the entry: changed, new path.
    let c = "c".repeat(40);
    let moved = file("services/z/project.yaml", "b", "v1");
    let push = touched(&b, &c, vec![moved], &["services/b/project.yaml"]);
    assert_eq!(f.handler.apply(&ID, Ok(push)).await, Ok("synced"));
    let history = changes::history(&f.pool, "b", None, 10)
        .await
        .expect("history");
    assert_eq!(
        history.items[0].kind,
        ChangeKind::Changed,
        "moved, never removed"
    );
    let all = entries(&f.pool).await;
    assert_eq!(all[1].1, "services/z/project.yaml", "{all:?}");
    assert_eq!(all.len(), 2);

    // Every file gone: no file left, at the push's commit.
    let d = "d".repeat(40);
    let push = touched(
        &c,
        &d,
        Vec::new(),
        &["services/a/project.yaml", "services/z/project.yaml"],
    );
    assert_eq!(f.handler.apply(&ID, Ok(push)).await, Ok("no_file"));
    assert!(entries(&f.pool).await.is_empty());
    assert_eq!(synced_sha(&f.pool).await, d);
}

/// Applies `push` and checks that nothing was written and the repository
/// waits in the queue for a full read.
async fn read_again(f: &Fixture, push: Observed, why: &str) {
    let before = entries(&f.pool).await;
    let sha = synced_sha(&f.pool).await;
    assert_eq!(
        f.handler.apply(&ID, Ok(push)).await,
        Ok("read again"),
        "{why}"
    );
    assert_eq!(entries(&f.pool).await, before, "{why}: nothing written");
    assert_eq!(synced_sha(&f.pool).await, sha, "{why}");
    let claim = f.queue.claim("w").await.expect("claim").expect(why);
    assert_eq!(claim.key, ID);
    assert_eq!(claim.scope, None, "{why}: a full read");
    f.queue.done(&claim).await.expect("done");
}

#[tokio::test]
async fn a_partial_read_that_no_longer_applies_should_write_nothing_and_read_again() {
    let f = synced().await;
    let a = "a".repeat(40);
    // The registry moved past the push's `before`.
    let stale = touched(
        &"9".repeat(40),
        &"b".repeat(40),
        vec![service("b", "v1")],
        &[],
    );
    read_again(&f, stale, "another before").await;
    // A touched file names what an untouched file holds.
    let clash = file("services/b/project.yaml", "a", "v1");
    read_again(
        &f,
        touched(&a, &"b".repeat(40), vec![clash], &[]),
        "a clash",
    )
    .await;
    // A repository that is not synced (an invalid file kept).
    let broken = PathFile {
        path: "services/b/project.yaml".into(),
        content: FileContent::Bytes(b"name: [\n".to_vec()),
    };
    let push = touched(&a, &"b".repeat(40), vec![broken], &[]);
    assert_eq!(f.handler.apply(&ID, Ok(push)).await, Ok("invalid"));
    assert_eq!(
        entries(&f.pool).await.len(),
        3,
        "the invalid file's entry kept"
    );
    let next = touched(&a, &"c".repeat(40), vec![service("c", "v2")], &[]);
    read_again(&f, next, "invalid").await;
}
