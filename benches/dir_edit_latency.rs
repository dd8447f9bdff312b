//! Time from editing a project file under a `dir:` source to the API
//! showing the change (median of 20), on the real binary and a fresh
//! database. Run: `cargo bench --bench dir_edit_latency`.

use std::time::{Duration, Instant};

use roster_testkit::http::get;
use roster_testkit::server::{eventually, Roster};

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; under `cargo test` this is a quick
    // smoke run that only shows the benchmark still works.
    let rounds = if roster_testkit::bench_mode::full() {
        20
    } else {
        2
    };
    let (_pool, url) = roster::db::testing::fresh_database()
        .await
        .expect("database (is PostgreSQL running? see scripts/test)");
    let dir = tempfile::tempdir().expect("temp dir");
    let org = dir.path().join("org");
    for i in 0..12 {
        let folder = org.join(format!("service-{i:02}"));
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::write(
            folder.join("project.yaml"),
            format!("name: service-{i:02}\nowner: team\n"),
        )
        .expect("write");
    }
    let env = [
        ("DATABASE_URL", url),
        ("ROSTER_SOURCE", format!("dir:{}", org.display())),
    ];
    let roster = Roster::start(&env, dir.path()).await;
    eventually("first sync", Duration::from_secs(60), || async {
        let p = get(&roster.url("/api/v1/projects/service-00")).await.ok()?;
        (p.status == 200).then_some(())
    })
    .await;

    let mut samples = Vec::new();
    for round in 0..rounds {
        let description = format!("round {round}");
        let started = Instant::now();
        std::fs::write(
            org.join("service-00/project.yaml"),
            format!("name: service-00\nowner: team\ndescription: {description}\n"),
        )
        .expect("write");
        // Poll tightly: the figure is the latency, not the polling period.
        loop {
            let p = get(&roster.url("/api/v1/projects/service-00"))
                .await
                .expect("api")
                .json();
            if p["description"] == description.as_str() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "edit never showed up"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        samples.push(started.elapsed());
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(samples[((samples.len() - 1) as f64 * q).round() as usize]);
    println!("dir edit → API visible, {rounds} edits (polling the API every 2 ms):");
    println!(
        "  median {:.1} ms   p90 {:.1} ms   min {:.1} ms   max {:.1} ms",
        at(0.5),
        at(0.9),
        at(0.0),
        at(1.0)
    );
}
