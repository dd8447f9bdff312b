//! The yardstick the benchmarks compare with: `pgbench` running the
//! simplest comparable write (one upsert of one row per transaction) on the
//! same server, in the same run.

use std::path::PathBuf;

use anyhow::{bail, Context};

/// How long pgbench runs.
pub const SECONDS: u32 = 10;

const SCRIPT: &str = "\\set id random(1, 10000)
INSERT INTO bench_upsert(id, n) VALUES (:id, 1) ON CONFLICT (id) DO UPDATE SET n = bench_upsert.n + 1;
";

/// Runs pgbench with `clients` connections on `url` (whose pool is `pool`)
/// for [`SECONDS`] and returns its transactions per second.
pub async fn upserts_per_second(
    pool: &sqlx::PgPool,
    url: &str,
    clients: u32,
) -> anyhow::Result<f64> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS bench_upsert (id integer PRIMARY KEY, n integer NOT NULL)",
    )
    .execute(pool)
    .await?;
    let program = find_pgbench().context("pgbench not found on PATH nor in /usr/lib/postgresql")?;
    let script = tempfile::Builder::new().suffix(".sql").tempfile()?;
    std::fs::write(script.path(), SCRIPT)?;
    let output = tokio::process::Command::new(&program)
        .args(["-n", "-c", &clients.to_string(), "-j", &clients.to_string()])
        .args(["-T", &SECONDS.to_string(), "-f"])
        .arg(script.path())
        .arg(url)
        .output()
        .await
        .with_context(|| format!("running {}", program.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "pgbench failed: {}{}",
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // "tps = 12345.678901 (without initial connection time)"
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|tps| tps.parse().ok())
        .with_context(|| format!("no tps in pgbench's output:\n{stdout}"))
}

fn find_pgbench() -> Option<PathBuf> {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("pgbench"))
                .collect()
        })
        .unwrap_or_default();
    let mut installed: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|versions| {
            versions
                .flatten()
                .map(|v| v.path().join("bin/pgbench"))
                .collect()
        })
        .unwrap_or_default();
    installed.sort();
    on_path
        .into_iter()
        .chain(installed.into_iter().rev())
        .find(|p| p.is_file())
}
