//! Log output: `tracing` events to stderr, as text for people or JSON for
//! log collectors (`ROSTER_LOG_FORMAT`). `RUST_LOG` picks what is shown.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

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

/// Installs the global subscriber; a second call is ignored (tests may
/// start several servers in one process).
pub fn init(format: LogFormat) {
    let wanted = std::env::var("RUST_LOG").ok();
    let filter = EnvFilter::try_new(directives(wanted.as_deref()))
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_logs_should_keep_the_http_clients_urls_out_unless_it_is_named() {
        assert_eq!(directives(None), DEFAULT_FILTER);
        assert_eq!(directives(Some("  ")), DEFAULT_FILTER);
        assert_eq!(directives(Some("debug")), "debug,octocrab=info");
        assert_eq!(directives(Some("octocrab=trace")), "octocrab=trace");
        let filter = EnvFilter::try_new(directives(Some("debug"))).expect("valid filter");
        assert!(filter.to_string().contains("octocrab=info"), "{filter}");
    }
}
