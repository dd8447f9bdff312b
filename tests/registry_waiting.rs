//! A repository whose read waits for GitHub's rate limit (a deferred
//! failure): `pending` with what it waits for, nothing counted, nothing
//! lost — against a real PostgreSQL.

use crate::support::registry::{handler, installed_repo, queue};
use std::time::Duration;

use roster::controller::{Failure, Handler};
use roster::db::testing::fresh_database;
use roster::registry::{get_repo, Status};
use roster::source::{FileState, Observed, RepoId, RepoInfo};

const WAIT: &str = "waiting for GitHub's rate limit, resets at 14:05:00 UTC";

fn info(name: &str) -> RepoInfo {
    installed_repo("acme", name, 7)
}

fn found(name: &str, project: &str) -> Observed {
    Observed::Present {
        repo: info(name),
        file: FileState::Found {
            sha: format!("{name}-sha"),
            bytes: format!("name: {project}\nowner: team\n").into_bytes(),
        },
    }
}

#[tokio::test]
async fn a_deferred_read_should_leave_the_repository_pending_with_its_entries_and_conflicts() {
    let (pool, _url) = fresh_database().await.expect("fresh database");
    let queue = queue(&pool);
    let handler = handler(&pool, queue);
    let (owner, loser) = (RepoId(1), RepoId(2));
    handler
        .apply(&owner, Ok(found("owner", "shared")))
        .await
        .expect("synced");
    let outcome = handler
        .apply(&loser, Ok(found("loser", "shared")))
        .await
        .expect("a conflict");
    assert_eq!(outcome, "conflict");

    for id in [owner, loser] {
        let failure = Failure::scripted(WAIT).deferred_for(Duration::from_secs(600));
        let returned = handler.apply(&id, Err(failure.clone())).await;
        assert_eq!(
            returned,
            Err(failure),
            "the wait goes back to the controller"
        );
    }

    let owner_now = get_repo(&pool, "acme", "owner")
        .await
        .expect("read")
        .expect("known");
    assert_eq!(owner_now.repo.status, Status::Pending);
    assert_eq!(owner_now.repo.error.as_deref(), Some(WAIT));
    assert_eq!(owner_now.repo.attempts, 0, "not a failed attempt");
    assert_eq!(owner_now.repo.synced_sha.as_deref(), Some("owner-sha"));
    assert_eq!(
        owner_now.repo.projects,
        vec!["shared".to_owned()],
        "entries kept"
    );
    assert!(owner_now.events.iter().all(|e| e.kind != "error"));
    assert_eq!(owner_now.events[0].message, WAIT);

    let loser_now = get_repo(&pool, "acme", "loser")
        .await
        .expect("read")
        .expect("known");
    assert_eq!(loser_now.repo.status, Status::Pending);
    let conflicts: Vec<String> =
        sqlx::query_scalar("select unnest(conflicts) from repositories where id = 2")
            .fetch_all(&pool)
            .await
            .expect("conflicts");
    assert_eq!(
        conflicts,
        vec!["shared".to_owned()],
        "still waiting for the name"
    );

    // Waiting again changes nothing and adds no event.
    let events = loser_now.events.len();
    let _ = handler
        .apply(
            &loser,
            Err(Failure::scripted(WAIT).deferred_for(Duration::from_secs(600))),
        )
        .await;
    let again = get_repo(&pool, "acme", "loser")
        .await
        .expect("read")
        .expect("known");
    assert_eq!(again.events.len(), events);
}
