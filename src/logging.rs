//! Log output: `tracing` events to stderr, as text for people or JSON for
//! log collectors (`ROSTER_LOG_FORMAT`). `RUST_LOG` picks what is shown:
//! a level, and levels per target (`info,sqlx=warn`). Those are read with
//! `Targets`, not `EnvFilter`, whose span and field filters no one here
//! uses and whose regular expressions cost every build a regex engine.

use std::io::IsTerminal;

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;

use crate::config::LogFormat;

/// What is shown when `RUST_LOG` is unset: our own info lines, and only
/// warnings from sqlx (it logs every slow statement at info).
pub const DEFAULT_FILTER: &str = "info,sqlx=warn";

/// The HTTP client's debug span records each request's whole URL, and
/// notification targets (Slack, Discord and the like) keep their secret in
/// the path or the query: it is shown only to whoever names the client in
/// `RUST_LOG`.
const HTTP_CLIENT_QUIET: &str = "octocrab=info";

/// The filter for `RUST_LOG` (the default when unset or empty), with the
/// HTTP client held at info unless `RUST_LOG` names it.
pub fn directives(rust_log: Option<&str>) -> String {
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => DEFAULT_FILTER.to_owned(),
        Some(wanted) if wanted.contains("octocrab") => wanted.to_owned(),
        Some(wanted) => format!("{wanted},{HTTP_CLIENT_QUIET}"),
    }
}

/// The filter `RUST_LOG` asks for; the default when it cannot be read.
pub fn filter(rust_log: Option<&str>) -> Targets {
    directives(rust_log)
        .parse()
        .unwrap_or_else(|_| DEFAULT_FILTER.parse().unwrap_or_default())
}

/// Installs the global subscriber; a second call is ignored (tests may
/// start several servers in one process).
pub fn init(format: LogFormat) {
    let wanted = std::env::var("RUST_LOG").ok();
    let filter = filter(wanted.as_deref());
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = match format {
        LogFormat::Text => tracing::subscriber::set_global_default(builder.finish().with(filter)),
        LogFormat::Json => tracing::subscriber::set_global_default(
            builder.json().flatten_event(true).finish().with(filter),
        ),
    };
    // Already installed: keep the first one.
    drop(result);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_logs_should_keep_the_http_clients_urls_out_unless_it_is_named() {
        assert_eq!(directives(None), DEFAULT_FILTER);
        assert_eq!(directives(Some("  ")), DEFAULT_FILTER);
        assert_eq!(directives(Some("debug")), "debug,octocrab=info");
        assert_eq!(directives(Some("octocrab=trace")), "octocrab=trace");
        let filter = filter(Some("debug"));
        assert!(filter.would_enable("roster::app", &tracing::Level::DEBUG));
        assert!(!filter.would_enable("octocrab::service", &tracing::Level::DEBUG));
        assert!(filter.would_enable("octocrab::service", &tracing::Level::INFO));
    }

    #[test]
    fn rust_log_should_pick_levels_per_target_and_fall_back_on_nonsense() {
        let quiet = filter(None);
        assert!(quiet.would_enable("roster", &tracing::Level::INFO));
        assert!(!quiet.would_enable("roster", &tracing::Level::DEBUG));
        assert!(!quiet.would_enable("sqlx::query", &tracing::Level::INFO));
        assert!(quiet.would_enable("sqlx::query", &tracing::Level::WARN));
        let nonsense = filter(Some("roster=loud"));
        assert!(nonsense.would_enable("roster", &tracing::Level::INFO));
        assert!(!nonsense.would_enable("roster", &tracing::Level::DEBUG));
    }
}
