//! Log output: `tracing` events to stderr, as text for people or JSON for
//! log collectors (`ROSTER_LOG_FORMAT`). `RUST_LOG` picks what is shown.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// What is shown when `RUST_LOG` is unset: our own info lines, and only
/// warnings from sqlx (it logs every slow statement at info).
pub const DEFAULT_FILTER: &str = "info,sqlx=warn";

/// Installs the global subscriber; a second call is ignored (tests may
/// start several servers in one process).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // Already installed: keep the first one.
    drop(result);
}
