//! PostgreSQL restarted under a running server (docs/operations.md#settings, docs/contract.md#http-routes `/readyz`, docs/contract.md#webhooks):
//! the server keeps running, answers webhooks 503 while the database is
//! away (GitHub records a failure, which a redelivery recovers), reports
//! not ready, and resumes its work by itself once the database is back.
//!
//! The test runs its own PostgreSQL (the private one `roster serve` uses
//! without `DATABASE_URL`) so it can stop and start it without disturbing
//! other tests.

use crate::support;
use support::fake_github;
use support::github_server;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use fake_github::FakeGithub;
use github_server::{
    github_env, project, project_yaml, push, push_payload, reconciles, send_webhook, wait_synced,
    FILE, WEBHOOK_SECRET,
};
use roster::db::embedded::EmbeddedPostgres;
use support::http;
use support::server::{eventually, Roster};

/// Stops the private PostgreSQL of `data_dir` when the test ends, even when
/// it fails (`pg_ctl stop -m immediate`, as the user that owns the cluster).
struct StopOnDrop {
    data_dir: PathBuf,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::process::CommandExt;
        let pgdata = self.data_dir.join("pgdata");
        let Some(pg_ctl) = pg_ctl() else { return };
        let mut cmd = std::process::Command::new(pg_ctl);
        cmd.args(["stop", "-m", "immediate", "-D"])
            .arg(&pgdata)
            .current_dir(&self.data_dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Ok(meta) = std::fs::metadata(&pgdata) {
            cmd.uid(meta.uid()).gid(meta.gid());
        }
        let _ = cmd.status();
    }
}

fn pg_ctl() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin/pg_ctl"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}

/// A folder the `postgres` system user may enter (the cluster runs as that
/// user when the tests run as root).
fn open_folder(tmp: &Path) -> PathBuf {
    std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    tmp.join("pg")
}

async fn status_of(url: &str) -> Option<u16> {
    http::get(url).await.ok().map(|a| a.status.as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_should_answer_503_meanwhile_and_resume_by_itself() {
    let tmp = tempfile::tempdir().expect("a temp folder");
    let data_dir = open_folder(tmp.path());
    let _stop = StopOnDrop {
        data_dir: data_dir.clone(),
    };
    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("the private PostgreSQL starts");

    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "before"));
    let mut env = github_env(&fake, &pg.url());
    env.push(("ROSTER_RESYNC_INTERVAL", "2s".to_owned()));
    let mut server = Roster::start(&env, tmp.path()).await;
    let head = fake.head(id).expect("a head");
    wait_synced(&server.base, "svc", &head, Duration::from_secs(20)).await;

    // The database goes away.
    pg.stop().await.expect("PostgreSQL stops");
    let down_at = Instant::now();
    eventually("/readyz to answer 503", Duration::from_secs(10), || async {
        (status_of(&server.url("/readyz")).await == Some(503)).then_some(())
    })
    .await;

    // A change pushed during the outage: its webhook cannot be persisted.
    let new_head = fake.push_file(id, FILE, project_yaml("svc", "after").as_bytes());
    let body = push_payload(id, "acme", "svc");
    let sent = Instant::now();
    let during = send_webhook(
        &server.base,
        WEBHOOK_SECRET,
        "push",
        "during-outage",
        body.clone(),
    )
    .await
    .expect("the server answers");
    assert_eq!(during.status, 503, "{}", during.body);
    println!(
        "webhook during the outage answered 503 in {:?}",
        sent.elapsed()
    );
    assert_eq!(status_of(&server.url("/healthz")).await, Some(200));
    // The outage lasts until the background loops have met it too.
    for failure in [
        "could not check the listing schedule",
        "claiming work failed",
        "queue listener lost its connection",
    ] {
        eventually(failure, Duration::from_secs(10), || async {
            server.logs().contains(failure).then_some(())
        })
        .await;
    }
    assert_eq!(status_of(&server.url("/readyz")).await, Some(503));
    assert!(
        server.child.try_wait().expect("process status").is_none(),
        "the server exited while the database was down"
    );

    // The database comes back (same data folder, same socket).
    let pg = EmbeddedPostgres::start(&data_dir)
        .await
        .expect("PostgreSQL starts again");
    let back_at = Instant::now();
    let back_wall = Utc::now();
    println!("PostgreSQL was down for {:?}", back_at - down_at);

    eventually("/readyz to answer 200", Duration::from_secs(15), || async {
        (status_of(&server.url("/readyz")).await == Some(200)).then_some(())
    })
    .await;
    let ready_after = back_at.elapsed();

    // Nothing but the periodic listing brings the change in.
    wait_synced(&server.base, "svc", &new_head, Duration::from_secs(30)).await;
    let applied_after = back_at.elapsed();
    let entry = project(&server.base, "svc").await.expect("the entry");
    assert_eq!(entry["description"], "after", "{entry}");

    let first_reconcile = reconciles(&[server.log.as_path()])
        .into_iter()
        .filter(|r| r.start >= back_wall && r.line["message"] == "reconciled")
        .map(|r| r.end - back_wall)
        .min()
        .expect("a successful reconcile after the database came back");
    println!(
        "after PostgreSQL came back: /readyz 200 within {ready_after:?}, first successful \
         reconcile {} ms, the change pushed during the outage applied within {applied_after:?}",
        first_reconcile.num_milliseconds()
    );

    // GitHub's redelivery of the failed delivery is now accepted.
    let again = send_webhook(&server.base, WEBHOOK_SECRET, "push", "during-outage", body)
        .await
        .expect("the server answers");
    assert_eq!(again.status, 202, "{}", again.body);
    let again = push(&server.base, id, "svc").await;
    assert_eq!(again.status, 202, "{}", again.body);

    assert!(
        server.child.try_wait().expect("process status").is_none(),
        "the server exited"
    );
    let logs = server.logs();
    assert!(!logs.contains("panicked"), "the server panicked: {logs}");
    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
    pg.stop().await.expect("PostgreSQL stops");
}
