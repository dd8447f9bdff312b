//! How big a benchmark runs, and whether it weighs its figures against its
//! targets.
//!
//! `cargo bench` passes `--bench`: the full size, with each figure's target
//! and a `[met]` or `[MISSED]` verdict. Anything else (`cargo test --benches`,
//! or `ROSTER_BENCH_SMOKE=1` set, as `scripts/bench-smoke` does) is a smoke
//! run: a small size that only shows the benchmark still works, so its
//! figures are printed bare. A target next to a smoke figure would read as a
//! failure when nothing failed.

/// The environment variable that forces the smoke size, even under
/// `cargo bench`.
pub const SMOKE_VAR: &str = "ROSTER_BENCH_SMOKE";

/// True for a full run: `--bench` among the arguments and `ROSTER_BENCH_SMOKE`
/// unset or empty.
pub fn full() -> bool {
    let smoke = std::env::var_os(SMOKE_VAR).is_some_and(|v| !v.is_empty() && v != "0");
    !smoke && std::env::args().any(|a| a == "--bench")
}

/// `" (target TEXT)"` in a full run; nothing in a smoke run.
pub fn target(text: &str) -> String {
    if full() {
        format!(" (target {text})")
    } else {
        String::new()
    }
}

/// `[met]` or `[MISSED]` in a full run; nothing in a smoke run, where the
/// targets do not apply.
pub fn verdict(met: bool) -> &'static str {
    match (full(), met) {
        (false, _) => "",
        (true, true) => "[met]",
        (true, false) => "[MISSED]",
    }
}

/// Says, once at the start of a benchmark, which size it runs.
pub fn announce(name: &str) {
    if !full() {
        println!("{name} (smoke run, no targets; `cargo bench --bench {name}` runs the full size)");
    }
}
