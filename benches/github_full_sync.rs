//! Full-listing benchmark: a fake organisation of 10,000 repositories
//! (3,000 with a project file) behind a fake GitHub that adds 50 ms to every
//! request. Prints the listing time and the GitHub requests it cost.
//!
//! Then the organisation gets 500 teams and 5,000 members, and the listing
//! runs again: the directory's reads (100 teams or members a request, beside
//! the repositories' pages) and what they add are printed.
//!
//! Targets: at most 120 requests and 15 s. Run with
//! `cargo bench --bench github_full_sync` (needs PostgreSQL, as the tests).

use roster_testkit::bench_mode;
use roster_testkit::fake_github;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_github::{routes, FakeGithub};
use roster::controller::Lister;
use roster::github::GithubSource;
use roster::metrics::Metrics;

const REPOS: usize = 10_000;
const WITH_FILE: usize = 3_000;
const LATENCY: Duration = Duration::from_millis(50);
const TEAMS: usize = 500;
const MEMBERS: usize = 5_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this
    // binary without it, and the figures only mean something in release.
    if !roster_testkit::bench_mode::full() {
        println!("skipped: run with `cargo bench`");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let fake = FakeGithub::start().await;
    fake.add_installation(1, "acme");
    for n in 0..REPOS {
        let name = format!("service-{n:05}");
        if n % (REPOS / WITH_FILE) == 0 && n / (REPOS / WITH_FILE) < WITH_FILE {
            let text = format!("name: {name}\nowner: team-{}\ntags: [bench]\n", n % 40);
            fake.add_repo_with_file(1, &name, "project.yaml", &text);
        } else {
            fake.add_repo(1, &name);
        }
    }
    fake.set_latency(LATENCY);

    let (pool, _url) = roster::db::testing::fresh_database().await?;
    let metrics = Arc::new(Metrics::new(
        &mut prometheus_client::registry::Registry::default(),
    ));
    let source =
        GithubSource::connect(&fake.settings(), "project.yaml", pool.clone(), metrics).await?;
    fake.reset_counts();

    let started = Instant::now();
    let partitions = source.lister().list().await?;
    let elapsed = started.elapsed();

    let items: usize = partitions.iter().map(|p| p.items.len()).sum();
    let complete = partitions.iter().all(|p| p.outcome.is_ok());
    let hinted_files = partitions
        .iter()
        .flat_map(|p| &p.items)
        .filter_map(|i| i.hint.as_deref())
        .filter(|h| h.windows(7).any(|w| w == b"\"Found\""))
        .count();
    let requests = fake.total();

    println!("github_full_sync: {REPOS} repositories ({WITH_FILE} with a project file), {} ms added per request", LATENCY.as_millis());
    println!(
        "  full listing time:   {:.2} s{}",
        elapsed.as_secs_f64(),
        bench_mode::target("<= 15 s")
    );
    println!(
        "  GitHub requests:     {requests}{}",
        bench_mode::target("<= 120")
    );
    println!("    GraphQL pages:     {}", fake.count(routes::GRAPHQL));
    println!(
        "    installations:     {}",
        fake.count(routes::INSTALLATIONS)
    );
    println!("    token creations:   {}", fake.token_creations());
    println!(
        "    directory reads:   {} (an organisation without teams or members)",
        fake.count(routes::GRAPHQL_DIRECTORY)
    );
    println!("  repositories listed: {items}, with a file: {hinted_files}, complete: {complete}");

    if items != REPOS || hinted_files != WITH_FILE || !complete {
        return Err("the listing did not return every repository and file".into());
    }

    fake.add_teams(1, TEAMS);
    fake.add_members(1, MEMBERS);
    fake.reset_counts();
    let started = Instant::now();
    source.lister().list().await?;
    let with_directory = started.elapsed();
    let directory = roster::directory::DirectoryDb::new(pool)
        .load(fake_github::directory::org_id(1))
        .await?
        .ok_or("the organisation is not known")?;
    let reads = fake.count(routes::GRAPHQL_DIRECTORY);
    println!("with {TEAMS} teams and {MEMBERS} members:");
    println!(
        "  full listing time:   {:.2} s ({:+.2} s)",
        with_directory.as_secs_f64(),
        with_directory.as_secs_f64() - elapsed.as_secs_f64()
    );
    println!(
        "  GitHub requests:     {} ({reads} directory reads, {} pages of teams and {} of members expected)",
        fake.total(),
        TEAMS.div_ceil(100),
        MEMBERS.div_ceil(100)
    );
    println!(
        "  directory:           {} teams, {} members stored",
        directory.teams.len(),
        directory.members.len()
    );
    if directory.teams.len() != TEAMS || directory.members.len() != MEMBERS {
        return Err("the directory was not read whole".into());
    }
    Ok(())
}
