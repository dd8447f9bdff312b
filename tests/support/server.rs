//! Runs the real `roster` binary for end-to-end tests.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `roster serve`; killed when dropped.
pub struct Roster {
    pub child: Child,
    pub base: String,
    pub log: std::path::PathBuf,
}

/// A port free right now (the OS picks it; the small race is acceptable
/// in tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The `roster` binary to run. ROSTER_BENCH_BINARY runs another build (an
/// earlier commit's, to compare figures in one sitting); the tests never set
/// it. Otherwise it is the one Cargo built next to the running test or
/// benchmark (`target/<profile>/roster`, the test in `target/<profile>/deps/`):
/// only the test's own crate is told that path at compile time.
pub fn binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("ROSTER_BENCH_BINARY") {
        return binary.into();
    }
    let test = std::env::current_exe().expect("the running test's path");
    let profile = test
        .parent()
        .and_then(Path::parent)
        .expect("the test runs from target/<profile>/deps");
    profile.join(format!("roster{}", std::env::consts::EXE_SUFFIX))
}

impl Roster {
    /// Starts `roster serve` with `env` (plus a listen address) and waits
    /// until `/healthz` answers.
    pub async fn start(env: &[(&str, String)], log_dir: &Path) -> Roster {
        Self::start_on(free_port(), env, log_dir).await
    }

    pub async fn start_on(port: u16, env: &[(&str, String)], log_dir: &Path) -> Roster {
        let log = log_dir.join(format!("roster-{port}.log"));
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(binary());
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ROSTER_LISTEN", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "info,sqlx=warn")
            .stdout(Stdio::null())
            .stderr(log_file);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn roster");
        let mut roster = Roster {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        };
        roster.wait_healthy().await;
        roster
    }

    async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(a) = super::http::get(&format!("{}/healthz", self.base)).await {
                if a.status.is_success() {
                    return;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("roster exited with {status}: {}", self.logs());
            }
            assert!(
                Instant::now() < deadline,
                "roster did not start: {}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let status = self.child.wait().expect("wait roster");
        std::mem::forget(self);
        status
    }

    /// `kill -9`: no shutdown at all, as in a crash.
    pub fn kill_hard(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::forget(self);
    }
}

impl Drop for Roster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` until it returns `Some`, or panics after `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
