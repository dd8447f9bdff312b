//! The `dir:` source's bounds (docs/contract.md#bounds), through the real binary: only
//! regular files inside the folder count, nothing outside it is ever read,
//! a FIFO never blocks a worker, and SIGTERM ends the process within 30 s
//! whatever the workers are doing.

use crate::support;
use support::stall_proxy;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::http::Method;
use roster::source::dir::NOT_REGULAR;
use serde_json::Value;
use stall_proxy::StallProxy;
use support::http::{get, send};
use support::server::{eventually, Roster};

const LIMIT: Duration = Duration::from_secs(30);
const TOKEN: &str = "dir-bounds-token";
/// Written only in files outside the source folder: it must never show.
const SECRET: &str = "s3cr3t-7f3a9d2c";
/// docs/contract.md#bounds: SIGTERM ends the process within this long.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// A source folder `org` and, beside it, `outside` holding files with the
/// secret: a valid project file, and in `bad/` one whose error would quote it.
struct Folders {
    dir: tempfile::TempDir,
    org: PathBuf,
    outside: PathBuf,
}

fn folders() -> Folders {
    let dir = tempfile::tempdir().expect("temp dir");
    let (org, outside) = (dir.path().join("org"), dir.path().join("outside"));
    std::fs::create_dir_all(&org).expect("mkdir");
    std::fs::create_dir_all(outside.join("bad")).expect("mkdir");
    std::fs::write(
        outside.join("project.yaml"),
        format!("name: {SECRET}\nowner: {SECRET}\ndescription: {SECRET}\n"),
    )
    .expect("write");
    std::fs::write(
        outside.join("bad/project.yaml"),
        format!("name: x\nowner: y\n{SECRET}: z\n"),
    )
    .expect("write");
    Folders { dir, org, outside }
}

/// A repository folder `name` whose file declares the project `name`.
fn repository(org: &Path, name: &str) {
    std::fs::create_dir_all(org.join(name)).expect("mkdir");
    std::fs::write(
        org.join(name).join("project.yaml"),
        format!("name: {name}\nowner: team-{name}\n"),
    )
    .expect("write");
}

fn make_fifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).expect("path");
    // SAFETY: `c` is a NUL-terminated path alive for the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// Swaps two paths in one step (`RENAME_EXCHANGE`), so a reconcile never
/// sees the repository without a file or without a folder in between.
fn exchange(a: &Path, b: &Path) {
    let (ca, cb) = (
        CString::new(a.as_os_str().as_bytes()).expect("path"),
        CString::new(b.as_os_str().as_bytes()).expect("path"),
    );
    // SAFETY: both are NUL-terminated paths alive for the call.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "renameat2: {}", std::io::Error::last_os_error());
}

async fn start(org: &Path, log_dir: &Path, database_url: String, workers: u32) -> Roster {
    let env = [
        ("DATABASE_URL", database_url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
        ("ROSTER_RESYNC_INTERVAL", "1h".to_string()),
        ("ROSTER_WORKERS", workers.to_string()),
        ("ROSTER_API_TOKEN", TOKEN.to_string()),
    ];
    Roster::start(&env, log_dir).await
}

async fn repo(roster: &Roster, name: &str) -> Value {
    get(&roster.url(&format!("/api/v1/repos/local/{name}")))
        .await
        .expect("repo")
        .json()
}

async fn wait_status(roster: &Roster, name: &str, status: &str) -> Value {
    eventually(&format!("{name} {status}"), LIMIT, || async {
        let r = repo(roster, name).await;
        (r["status"] == status).then_some(r)
    })
    .await
}

async fn entry(roster: &Roster, name: &str) -> Value {
    let a = get(&roster.url(&format!("/api/v1/projects/{name}")))
        .await
        .expect("entry");
    assert_eq!(a.status, 200, "{name}: {}", a.body);
    a.json()
}

async fn resync(roster: &Roster, name: &str) {
    let bearer = format!("Bearer {TOKEN}");
    let a = send(
        Method::POST,
        &roster.url(&format!("/api/v1/repos/local/{name}/resync")),
        &[("authorization", bearer.as_str())],
        Vec::new(),
    )
    .await
    .expect("resync");
    assert_eq!(a.status, 202, "{}", a.body);
}

/// Sends SIGTERM; how long the process took to exit and its status, or
/// `None` when it still runs after `limit` (it is then killed on drop).
async fn stop_within(
    roster: &mut Roster,
    limit: Duration,
) -> Option<(Duration, std::process::ExitStatus)> {
    let pid = roster.child.id().to_string();
    let asked = Instant::now();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    while asked.elapsed() < limit {
        if let Ok(Some(status)) = roster.child.try_wait() {
            return Some((asked.elapsed(), status));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Every answer people and scripts can read, concatenated.
async fn everything_served(roster: &Roster, repos: &[&str]) -> String {
    let mut paths: Vec<String> = [
        "/api/v1/repos",
        "/api/v1/projects",
        "/",
        "/projects",
        "/metrics",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    for r in repos {
        paths.push(format!("/api/v1/repos/local/{r}"));
        paths.push(format!("/repos/local/{r}"));
    }
    let mut all = String::new();
    for path in paths {
        let a = get(&roster.url(&path)).await.expect("answer");
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        all.push_str(&a.body);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_replaced_by_a_fifo_a_link_or_a_folder_should_turn_invalid_and_keep_its_entries() {
    let f = folders();
    let repos = ["fifo", "file-link", "folder", "folder-link"];
    for r in repos {
        repository(&f.org, r);
    }
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    // One worker: had the FIFO blocked it, nothing after it would be handled.
    let mut roster = start(&f.org, f.dir.path(), url, 1).await;
    let mut before = Vec::new();
    for r in repos {
        wait_status(&roster, r, "synced").await;
        before.push(entry(&roster, r).await);
    }

    // Each replacement in one step: no reconcile can see a missing file.
    let fifo = f.org.join("fifo/.new");
    make_fifo(&fifo);
    std::fs::rename(&fifo, f.org.join("fifo/project.yaml")).expect("rename");
    let link = f.org.join("file-link/.new");
    symlink(f.outside.join("project.yaml"), &link).expect("symlink");
    std::fs::rename(&link, f.org.join("file-link/project.yaml")).expect("rename");
    let folder = f.org.join("folder/.new");
    std::fs::create_dir(&folder).expect("mkdir");
    exchange(&folder, &f.org.join("folder/project.yaml"));
    let folder_link = f.org.join(".folder-link-new");
    symlink(f.outside.join("bad"), &folder_link).expect("symlink");
    exchange(&folder_link, &f.org.join("folder-link"));

    let expected_error = format!("project.yaml: file: {NOT_REGULAR}");
    for (r, old) in repos.iter().zip(&before) {
        // The watcher enqueued the change; a resync asks again, as people do.
        resync(&roster, r).await;
        let detail = wait_status(&roster, r, "invalid").await;
        assert_eq!(detail["error"], expected_error.as_str(), "{r}: {detail}");
        assert_eq!(detail["projects"], serde_json::json!([r]), "{r}");
        assert_eq!(&entry(&roster, r).await, old, "{r}: entry changed");
    }
    let listed = get(&roster.url("/api/v1/projects"))
        .await
        .expect("projects")
        .json();
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(repos.len()));

    let served = everything_served(&roster, &repos).await;
    assert!(!served.contains(SECRET), "the secret was served");
    assert!(!roster.logs().contains(SECRET), "the secret was logged");
    let (took, status) = stop_within(&mut roster, STOP_LIMIT)
        .await
        .expect("still running after SIGTERM");
    assert!(status.success(), "exit {status} after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_should_end_the_process_promptly_while_a_fifo_is_resynced_over_and_over() {
    let f = folders();
    repository(&f.org, "good");
    std::fs::create_dir(f.org.join("fifo")).expect("mkdir");
    make_fifo(&f.org.join("fifo/project.yaml"));
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let mut roster = start(&f.org, f.dir.path(), url, 2).await;
    wait_status(&roster, "good", "synced").await;
    let detail = wait_status(&roster, "fifo", "invalid").await;
    assert_eq!(
        detail["error"],
        format!("project.yaml: file: {NOT_REGULAR}")
    );

    // Resync the FIFO repository without pause until the server is gone.
    let base = roster.base.clone();
    let hammer = tokio::spawn(async move {
        let url = format!("{base}/api/v1/repos/local/fifo/resync");
        let bearer = format!("Bearer {TOKEN}");
        let mut accepted = 0u32;
        while let Ok(a) = send(
            Method::POST,
            &url,
            &[("authorization", bearer.as_str())],
            Vec::new(),
        )
        .await
        {
            if a.status == 202 {
                accepted += 1;
            }
        }
        accepted
    });
    // The FIFO repository is being handled again and again meanwhile.
    let seen = repo(&roster, "fifo").await["events"][0]["at"].clone();
    eventually("another reconcile of the FIFO", LIMIT, || async {
        let now = repo(&roster, "fifo").await;
        (now["events"][0]["at"] != seen).then_some(())
    })
    .await;

    let (took, status) = stop_within(&mut roster, STOP_LIMIT)
        .await
        .expect("still running 30 s after SIGTERM");
    let accepted = hammer.await.expect("hammer");
    println!("stopped {took:?} after SIGTERM; {accepted} resyncs accepted before");
    assert!(status.success(), "exit {status}: {}", roster.logs());
    assert!(accepted > 0);
    assert!(
        !roster.logs().contains("shutdown did not finish in time"),
        "the graceful path did not finish by itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_should_end_the_process_within_30s_while_a_reconcile_hangs_in_the_database() {
    let f = folders();
    repository(&f.org, "svc");
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("test database");
    let mut url = url::Url::parse(&url).expect("url");
    let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
    let target = tokio::net::lookup_host((host.as_str(), url.port().unwrap_or(5432)))
        .await
        .expect("resolve")
        .next()
        .expect("an address");
    // Only the reconcile of the edit below sends this owner to the database.
    let marker = "owner-that-freezes-the-database";
    let proxy = StallProxy::start(target, Some(marker.as_bytes().to_vec())).await;
    url.set_host(Some("127.0.0.1")).expect("host");
    url.set_port(Some(proxy.addr.port())).expect("port");
    // Plain text, so the proxy can see the marker.
    url.query_pairs_mut().append_pair("sslmode", "disable");
    let mut roster = start(&f.org, f.dir.path(), url.to_string(), 2).await;
    wait_status(&roster, "svc", "synced").await;

    // The database stops answering in the middle of that reconcile.
    std::fs::write(
        f.org.join("svc/project.yaml"),
        format!("name: svc\nowner: {marker}\n"),
    )
    .expect("write");
    eventually(
        "the reconcile waiting on the frozen database",
        LIMIT,
        || async { (proxy.held() >= 1).then_some(()) },
    )
    .await;

    let (took, status) = stop_within(&mut roster, STOP_LIMIT)
        .await
        .expect("still running 30 s after SIGTERM");
    let cut = roster.logs().contains("shutdown did not finish in time");
    println!("stopped {took:?} after SIGTERM, a reconcile hanging: {status}, deadline hit: {cut}");
}
