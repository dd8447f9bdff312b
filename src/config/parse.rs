//! Parsing of the single-value settings, each error naming its setting.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, LogFormat, ProjectFiles, SourceSetting};

/// A default duration as a flag would be written (`1h`, `7d`, `90s`): the
/// largest unit that divides it, so `--help` shows what one would type.
pub(super) fn duration_text(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let unit = [(86_400, "d"), (3_600, "h"), (60, "m")]
        .into_iter()
        .find(|(size, _)| seconds > 0 && seconds % size == 0);
    match unit {
        Some((size, unit)) => format!("{}{unit}", seconds / size),
        None => format!("{seconds}s"),
    }
}

pub(super) fn parse_listen(raw: &str) -> Result<SocketAddr, ConfigError> {
    raw.trim().parse().map_err(|_| {
        ConfigError::new(
            "ROSTER_LISTEN",
            format!("{raw:?} is not an address like 127.0.0.1:8080"),
        )
    })
}

pub(super) fn parse_source(raw: Option<String>) -> Result<SourceSetting, ConfigError> {
    // Without an App in the environment, the App stored by setup is used,
    // or `serve` starts in setup mode to register one.
    let Some(raw) = raw else {
        return Ok(SourceSetting::Github);
    };
    let raw = raw.trim();
    if raw == "github" {
        return Ok(SourceSetting::Github);
    }
    let Some(path) = raw.strip_prefix("dir:") else {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            format!("{raw:?} is neither github nor dir:PATH"),
        ));
    };
    if path.is_empty() {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            "dir: needs a folder, e.g. dir:examples/org",
        ));
    }
    let path = PathBuf::from(path);
    if !path.is_dir() {
        return Err(ConfigError::new(
            "ROSTER_SOURCE",
            format!("folder {} does not exist", path.display()),
        ));
    }
    Ok(SourceSetting::Dir(path))
}

/// `ROSTER_PROJECT_FILES`, or its one-pattern alias `ROSTER_PROJECT_FILE`
/// (never both: which one would win is a guess nobody should have to make).
pub(super) fn parse_project_files(
    one: Option<String>,
    several: Option<String>,
) -> Result<ProjectFiles, ConfigError> {
    match (one, several) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            "ROSTER_PROJECT_FILES",
            "is set together with ROSTER_PROJECT_FILE; set only one of them",
        )),
        (Some(one), None) => ProjectFiles::one(&one).map_err(|m| {
            ConfigError::new(
                "ROSTER_PROJECT_FILE",
                format!("{m} (a path inside the repository, like project.yaml)"),
            )
        }),
        (None, Some(several)) => {
            ProjectFiles::parse(&several).map_err(|m| ConfigError::new("ROSTER_PROJECT_FILES", m))
        }
        (None, None) => Ok(ProjectFiles::default()),
    }
}

pub(super) fn parse_resync_interval(raw: &str) -> Result<Duration, ConfigError> {
    let interval = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            "ROSTER_RESYNC_INTERVAL",
            format!("{raw:?} is not a duration like 30s, 15m or 1h"),
        )
    })?;
    if interval < Duration::from_secs(1) {
        return Err(ConfigError::new(
            "ROSTER_RESYNC_INTERVAL",
            "must be at least 1s",
        ));
    }
    Ok(interval)
}

/// At least 1s: the lease is renewed every third of it, and a shorter one
/// would be lost to a slow database round trip.
pub(super) fn parse_lease(raw: &str) -> Result<Duration, ConfigError> {
    let lease = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            "ROSTER_LEASE",
            format!("{raw:?} is not a duration like 60s"),
        )
    })?;
    if lease < Duration::from_secs(1) {
        return Err(ConfigError::new("ROSTER_LEASE", "must be at least 1s"));
    }
    Ok(lease)
}

pub(super) fn parse_workers(raw: &str) -> Result<usize, ConfigError> {
    parse_count("ROSTER_WORKERS", raw, 256)
}

/// At most 100: one GraphQL query reads up to 100 repositories.
pub(super) fn parse_batch_size(raw: &str) -> Result<usize, ConfigError> {
    parse_count("ROSTER_BATCH_SIZE", raw, 100)
}

pub(super) fn parse_webhook_concurrency(raw: &str) -> Result<usize, ConfigError> {
    parse_count("ROSTER_WEBHOOK_CONCURRENCY", raw, 256)
}

/// `ROSTER_LONG_POLLS`: each waiting poll holds a connection and a little
/// memory, so the cap stays well below what a process can hold open.
pub(super) fn parse_long_polls(raw: &str) -> Result<usize, ConfigError> {
    parse_count("ROSTER_LONG_POLLS", raw, 100_000)
}

/// A whole number from 1 to `max`, named after `setting` when it is not.
fn parse_count(setting: &'static str, raw: &str, max: usize) -> Result<usize, ConfigError> {
    raw.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ConfigError::new(setting, format!("{raw:?} must be a number from 1 to {max}"))
        })
}

/// At least the 3 days the redelivery of missed deliveries looks back, so
/// pruning never removes a row it reads; at most 100 years, which keeps the
/// cut-off a valid PostgreSQL time.
pub(super) fn parse_delivery_retention(raw: &str) -> Result<Duration, ConfigError> {
    const SETTING: &str = "ROSTER_DELIVERY_RETENTION";
    let retention = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            SETTING,
            format!("{raw:?} is not a duration like 7d, 72h or 30d"),
        )
    })?;
    if retention < crate::intake::redelivery::WINDOW {
        return Err(ConfigError::new(
            SETTING,
            "must be at least 3d: the recovery of missed deliveries reads the last 3 days",
        ));
    }
    if retention > Duration::from_secs(100 * 365 * 24 * 3600) {
        return Err(ConfigError::new(SETTING, "must be at most 100y"));
    }
    Ok(retention)
}

pub(super) fn parse_log_format(raw: &str) -> Result<LogFormat, ConfigError> {
    match raw.trim() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(ConfigError::new(
            "ROSTER_LOG_FORMAT",
            format!("{raw:?} must be text or json"),
        )),
    }
}

pub(super) fn parse_trust_proxy(raw: &str) -> Result<bool, ConfigError> {
    match raw.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(ConfigError::new(
            "ROSTER_TRUST_PROXY",
            format!("{raw:?} must be true or false"),
        )),
    }
}
