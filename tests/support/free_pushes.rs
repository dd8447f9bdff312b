//! The pushes of github_batches that leave the project file alone, and the
//! check runs pushes post: rounds of pushes sent at a steady rate to
//! different synced repositories, each push's webhook-to-record time read
//! from the registry (`last_synced_at`, the time of the write).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::fake_github::{routes, FakeGithub};
use crate::github_app::{deliver, push, push_of_commits, Repo};

type Failed = Box<dyn std::error::Error>;

/// What a round of pushes changes, and how its payloads tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// README.md, each commit listing its paths (as GitHub sends pushes).
    Readme,
    /// README.md, with a payload that lists no paths of the push: read as
    /// every push was before pushes could be decided without a read.
    ReadmeUnlisted,
    /// The project file, each commit listing its paths.
    ProjectFile,
}

/// What one round cost.
pub struct Figures {
    /// Requests about repositories (tokens and the App's delivery log aside).
    pub requests: u64,
    pub tokens: u64,
    pub check_runs: u64,
    /// Of `check_runs`, those on this round's commits; the others are an
    /// earlier round's, posted meanwhile (posts go one a second).
    pub check_runs_here: u64,
    /// Push sent → `synced_sha` recorded, sorted.
    pub latencies: Vec<Duration>,
}

impl Figures {
    pub fn print(&self, label: &str, pushes: usize) {
        let at = |q: f64| {
            let n = self.latencies.len();
            let i = ((n as f64 * q).ceil() as usize).clamp(1, n.max(1)) - 1;
            self.latencies
                .get(i)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        println!("{label}");
        let earlier = self.check_runs.saturating_sub(self.check_runs_here);
        println!(
            "  GitHub requests for these pushes: {} (tokens aside: {} token requests), of them check runs on their commits: {} ({:.0} per 100 pushes); besides, {earlier} check runs of an earlier round's commits posted meanwhile",
            self.requests.saturating_sub(earlier),
            self.tokens,
            self.check_runs_here,
            self.check_runs_here as f64 * 100.0 / pushes.max(1) as f64
        );
        println!(
            "  webhook -> synced_sha recorded: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
}

/// Sends one push to each of `targets`, `rate` a second, changing what
/// `change` says; returns once every push's commit is recorded and, for the
/// project file, as many check runs posted, or else `quiet` later (the
/// requests of pushes that leave the file alone are counted meanwhile).
#[allow(clippy::too_many_arguments)]
pub async fn round(
    fake: &FakeGithub,
    base: &str,
    pool: &PgPool,
    targets: &[Repo],
    change: Change,
    rate: u32,
    file: &str,
    quiet: Duration,
) -> Result<Figures, Failed> {
    let mut heads = Vec::with_capacity(targets.len());
    let mut bodies = Vec::with_capacity(targets.len());
    for (n, repo) in targets.iter().enumerate() {
        let before = fake.head(repo.id).unwrap_or_default();
        let (path, bytes) = match change {
            Change::ProjectFile => (
                file,
                format!("name: {}\nowner: x\ndescription: round {n}\n", repo.name),
            ),
            _ => ("README.md", format!("round {n}\n")),
        };
        let after = fake.push_file(repo.id, path, bytes.as_bytes());
        let body = match change {
            Change::ReadmeUnlisted => push(repo, &before, &after),
            _ => push_of_commits(repo, &before, &after, &[(&after, &[path])]),
        };
        bodies.push(body);
        heads.push(after);
    }
    fake.reset_counts();
    let spacing = Duration::from_secs(1) / rate.max(1);
    let started = Instant::now();
    let mut sent_at = HashMap::with_capacity(heads.len());
    let mut senders = tokio::task::JoinSet::new();
    for (n, body) in bodies.into_iter().enumerate() {
        let at = started + spacing * u32::try_from(n).unwrap_or(u32::MAX);
        tokio::time::sleep_until(at.into()).await;
        sent_at.insert(heads[n].clone(), epoch_seconds());
        let base = base.to_owned();
        senders.spawn(async move { deliver(&base, "push", body).await.status.as_u16() });
    }
    while let Some(sent) = senders.join_next().await {
        match sent {
            Ok(202) => {}
            Ok(status) => return Err(format!("a push was answered {status}").into()),
            Err(e) => return Err(e.into()),
        }
    }
    let ids: Vec<i64> = targets.iter().map(|r| r.id).collect();
    let recorded = recorded(pool, &ids, &heads, Duration::from_secs(120)).await?;
    // Check runs are posted after the reconcile, by the checks loop.
    if change == Change::ProjectFile {
        let deadline = Instant::now() + Duration::from_secs(60);
        while fake.count(routes::CHECK_RUN_CREATE) < heads.len() as u64 && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    } else {
        tokio::time::sleep(quiet).await;
    }
    let mut latencies: Vec<Duration> = recorded
        .iter()
        .filter_map(|(sha, at)| Some(Duration::from_secs_f64((at - sent_at.get(sha)?).max(0.0))))
        .collect();
    latencies.sort();
    let tokens = fake.token_creations();
    let app = fake.count(routes::HOOK_DELIVERIES)
        + fake.count(routes::HOOK_ATTEMPTS)
        + fake.count(routes::INSTALLATIONS);
    Ok(Figures {
        requests: fake.total() - tokens - app,
        tokens,
        check_runs: fake.count(routes::CHECK_RUN_CREATE),
        check_runs_here: targets
            .iter()
            .zip(&heads)
            .map(|(repo, head)| fake.check_runs_on(repo.id, head).len() as u64)
            .sum(),
        latencies,
    })
}

/// Waits until each of `heads` is a repository's recorded commit; each
/// one's `last_synced_at`, in Unix seconds.
async fn recorded(
    pool: &PgPool,
    ids: &[i64],
    heads: &[String],
    limit: Duration,
) -> Result<Vec<(String, f64)>, Failed> {
    let deadline = Instant::now() + limit;
    loop {
        let rows: Vec<(String, f64)> = sqlx::query_as(
            "select synced_sha, extract(epoch from last_synced_at)::float8
             from repositories where synced_sha = any($1)",
        )
        .bind(heads)
        .fetch_all(pool)
        .await?;
        if rows.len() == heads.len() {
            return Ok(rows);
        }
        if Instant::now() > deadline {
            // Where the others stand, so a failure explains itself.
            let stuck: Vec<(i64, String, Option<String>)> =
                sqlx::query_as(
                    "select r.id, format('%s at %s: %s', r.status, r.synced_sha, left(r.error, 200)),
                            (select format('queued: trigger %s, hint %s, not_before %s, claimed %s',
                                           q.trigger, q.hint is not null, q.not_before, q.claimed_by is not null)
                             from queue q where q.repo_id = r.id)
                     from repositories r
                     where r.id = any($1) and not coalesce(r.synced_sha = any($2), false)
                     order by r.id limit 10",
                )
                .bind(ids)
                .bind(heads)
                .fetch_all(pool)
                .await
                .unwrap_or_else(|e| {
                    eprintln!("  (cannot say where they stand: {e})");
                    Vec::new()
                });
            for row in &stuck {
                eprintln!("  not recorded: {row:?}");
            }
            return Err(format!(
                "{} of {} pushes recorded after {limit:?}",
                rows.len(),
                heads.len()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn epoch_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
