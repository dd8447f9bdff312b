//! Slow-loris clients (issue "Hostile input"): many connections that send
//! a request header a byte at a time and never finish it. While they hang,
//! the probes and the API answer promptly and a webhook is still processed;
//! the server cuts them off after its header timeout, and they do not keep
//! it from stopping on SIGTERM.

use crate::support;
use support::fake_github;
use support::github_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_github::FakeGithub;
use github_server::{github_env, project_yaml, push, wait_synced, FILE};
use roster::db::testing::fresh_database;
use roster::web::serve::{HEADER_READ_TIMEOUT, SHUTDOWN_GRACE};
use support::http;
use support::server::{eventually, Roster};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

const SLOW_CLIENTS: usize = 200;
/// Time between two bytes of a slow client.
const TRICKLE: Duration = Duration::from_millis(200);
/// What an answer that is not held up takes at most, with room for a busy
/// test machine.
const PROMPT: Duration = Duration::from_secs(1);

struct Setup {
    fake: FakeGithub,
    server: Roster,
    _logs: tempfile::TempDir,
    id: i64,
}

async fn setup() -> Setup {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    let id = fake.add_repo_with_file(1, "svc", FILE, &project_yaml("svc", "before"));
    let (_pool, url) = fresh_database().await.expect("a fresh database");
    let logs = tempfile::tempdir().expect("a log folder");
    let server = Roster::start(&github_env(&fake, &url), logs.path()).await;
    let head = fake.head(id).expect("a head");
    wait_synced(&server.base, "svc", &head, Duration::from_secs(20)).await;
    Setup {
        fake,
        server,
        _logs: logs,
        id,
    }
}

/// Slow clients and what became of them.
struct SlowClients {
    tasks: JoinSet<()>,
    /// Clients that have sent the start of their header.
    started: Arc<AtomicUsize>,
    /// Clients whose connection the server closed.
    cut_off: Arc<AtomicUsize>,
}

/// Opens `n` connections to `addr` that each send a header one byte per
/// [`TRICKLE`], forever, until the server closes them.
async fn slow_clients(addr: &str, n: usize) -> SlowClients {
    let started = Arc::new(AtomicUsize::new(0));
    let cut_off = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let (started, cut_off) = (started.clone(), cut_off.clone());
        tasks.spawn(async move {
            let (mut read, mut write) = stream.into_split();
            let trickle = async {
                let start = b"POST /webhooks/github HTTP/1.1\r\nHost: roster\r\nX-Slow: ";
                for byte in start.iter() {
                    write.write_all(&[*byte]).await?;
                }
                started.fetch_add(1, Ordering::SeqCst);
                loop {
                    tokio::time::sleep(TRICKLE).await;
                    write.write_all(b"a").await?;
                }
                #[allow(unreachable_code)]
                Ok::<(), std::io::Error>(())
            };
            let closed = async {
                let mut buf = [0u8; 1024];
                // Whatever the server answers, it ends with a close.
                while read.read(&mut buf).await.unwrap_or(0) > 0 {}
            };
            tokio::select! {
                _ = trickle => {}
                _ = closed => {}
            }
            cut_off.fetch_add(1, Ordering::SeqCst);
        });
    }
    SlowClients {
        tasks,
        started,
        cut_off,
    }
}

async fn timed_get(url: &str) -> (u16, Duration) {
    let asked = Instant::now();
    let answer = http::get(url).await.expect("an answer");
    (answer.status.as_u16(), asked.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_loris_clients_should_not_keep_others_from_being_served() {
    let s = setup().await;
    let addr = s.server.base.trim_start_matches("http://").to_owned();
    let mut slow = slow_clients(&addr, SLOW_CLIENTS).await;
    eventually(
        "every slow client to start",
        Duration::from_secs(10),
        || async { (slow.started.load(Ordering::SeqCst) == SLOW_CLIENTS).then_some(()) },
    )
    .await;

    for path in [
        "/healthz",
        "/readyz",
        "/api/v1/repos",
        "/api/v1/projects",
        "/",
    ] {
        let (status, took) = timed_get(&s.server.url(path)).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            took < PROMPT,
            "{path} took {took:?} beside {SLOW_CLIENTS} slow clients"
        );
        println!("{path}: {took:?} beside {SLOW_CLIENTS} slow clients");
    }
    let head = s
        .fake
        .push_file(s.id, FILE, project_yaml("svc", "after").as_bytes());
    let sent = Instant::now();
    let answer = push(&s.server.base, s.id, "svc").await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    let answered = sent.elapsed();
    wait_synced(&s.server.base, "svc", &head, Duration::from_secs(10)).await;
    println!(
        "webhook answered in {answered:?}, applied {:?} after it was sent",
        sent.elapsed()
    );
    assert_eq!(
        slow.cut_off.load(Ordering::SeqCst),
        0,
        "slow clients were cut off before the header timeout"
    );
    slow.tasks.abort_all();
}

/// Sends SIGTERM and waits up to `limit` for the process to exit; how long
/// it took, or `None` (the process is then killed when `server` drops).
async fn stop_within(server: &mut Roster, limit: Duration) -> Option<Duration> {
    let pid = server.child.id().to_string();
    let asked = Instant::now();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    while asked.elapsed() < limit {
        if let Ok(Some(status)) = server.child.try_wait() {
            assert!(status.success(), "exit status {status}");
            return Some(asked.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_should_stop_the_server_while_slow_clients_hang() {
    let mut s = setup().await;
    let addr = s.server.base.trim_start_matches("http://").to_owned();
    let slow = slow_clients(&addr, 20).await;
    eventually(
        "every slow client to start",
        Duration::from_secs(10),
        || async { (slow.started.load(Ordering::SeqCst) == 20).then_some(()) },
    )
    .await;
    let limit = SHUTDOWN_GRACE + Duration::from_secs(5);
    let took = stop_within(&mut s.server, limit).await;
    println!("stopped {took:?} after SIGTERM, 20 slow clients hanging");
    assert!(
        took.is_some(),
        "still running {limit:?} after SIGTERM: {}",
        s.server.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_client_should_be_cut_off_after_the_header_timeout() {
    let s = setup().await;
    let addr = s.server.base.trim_start_matches("http://").to_owned();
    let connected = Instant::now();
    let slow = slow_clients(&addr, 5).await;
    let limit = HEADER_READ_TIMEOUT + Duration::from_secs(5);
    let cut = eventually(
        "the server to close the slow connections",
        limit,
        || async { (slow.cut_off.load(Ordering::SeqCst) == 5).then(|| connected.elapsed()) },
    )
    .await;
    assert!(
        cut >= HEADER_READ_TIMEOUT - Duration::from_secs(1),
        "cut off after {cut:?}, before the {HEADER_READ_TIMEOUT:?} header timeout"
    );
    // The server itself is fine.
    let (status, took) = timed_get(&s.server.url("/healthz")).await;
    assert_eq!(status, 200);
    assert!(took < PROMPT);
    println!("slow clients cut off {cut:?} after they connected");
}
