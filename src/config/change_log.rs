//! The settings of history and notifications: how long the change log
//! keeps a change, and where changes are POSTed.

use std::time::Duration;

use secrecy::SecretString;

use super::ConfigError;

/// `ROSTER_HISTORY_RETENTION`: at least an hour (a consumer needs time to
/// catch up), at most 100 years.
pub(super) fn parse_history_retention(raw: &str) -> Result<Duration, ConfigError> {
    const SETTING: &str = "ROSTER_HISTORY_RETENTION";
    let retention = humantime::parse_duration(raw.trim()).map_err(|_| {
        ConfigError::new(
            SETTING,
            format!("{raw:?} is not a duration like 90d, 30d or 12h"),
        )
    })?;
    if retention < Duration::from_secs(3600) {
        return Err(ConfigError::new(SETTING, "must be at least 1h"));
    }
    if retention > Duration::from_secs(100 * 365 * 24 * 3600) {
        return Err(ConfigError::new(SETTING, "must be at most 100y"));
    }
    Ok(retention)
}

/// `ROSTER_HISTORY_MAX_BYTES`: a size like `1GiB`, `500MiB`, `2GB` or a
/// number of bytes; at least 1 MiB (a page of the feed), at most 1 PiB.
pub(super) fn parse_history_max_bytes(raw: &str) -> Result<u64, ConfigError> {
    const SETTING: &str = "ROSTER_HISTORY_MAX_BYTES";
    let text = raw.trim();
    if text.is_empty() {
        // Set but empty, like the other settings: the default.
        return Ok(1 << 30);
    }
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => 0,
    };
    let bytes = number
        .parse::<u64>()
        .ok()
        .filter(|_| factor > 0)
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| {
            ConfigError::new(
                SETTING,
                format!("{raw:?} is not a size like 1GiB, 500MiB or 2GB"),
            )
        })?;
    if bytes < 1 << 20 {
        return Err(ConfigError::new(SETTING, "must be at least 1MiB"));
    }
    if bytes > 1 << 50 {
        return Err(ConfigError::new(SETTING, "must be at most 1PiB"));
    }
    Ok(bytes)
}

/// A notification URL as logs, metrics and pages show it: scheme, host and
/// port only. Services such as Slack, Zapier and Discord keep the secret
/// of a webhook in its path, others in the query or the user part, so
/// nothing after the port is shown.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => match parsed.host() {
            Some(host) => match parsed.port() {
                Some(port) => format!("{}://{host}:{port}", parsed.scheme()),
                None => format!("{}://{host}", parsed.scheme()),
            },
            None => format!("{}: (no host)", parsed.scheme()),
        },
        Err(_) => "(invalid URL)".to_owned(),
    }
}

/// Where changes are POSTed, and the secret that signs them.
#[derive(Debug, Clone, Default)]
pub struct NotifySettings {
    /// `http` or `https` URLs, in the order given, without duplicates.
    pub urls: Vec<String>,
    /// Set whenever `urls` is not empty.
    pub secret: Option<SecretString>,
}

/// `ROSTER_NOTIFY_URLS` (comma separated) and `ROSTER_NOTIFY_SECRET`; a URL
/// without a secret is refused, since receivers could not verify anything.
pub(super) fn parse_notify(
    urls: Option<&str>,
    secret: Option<String>,
) -> Result<NotifySettings, ConfigError> {
    let mut parsed: Vec<String> = Vec::new();
    for raw in urls.unwrap_or_default().split(',').map(str::trim) {
        if raw.is_empty() {
            continue;
        }
        let url = url::Url::parse(raw).map_err(|e| {
            ConfigError::new(
                "ROSTER_NOTIFY_URLS",
                format!("{} is not a URL: {e}", redact_url(raw)),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ConfigError::new(
                "ROSTER_NOTIFY_URLS",
                format!("{} is not an http(s) URL", redact_url(raw)),
            ));
        }
        if !parsed.iter().any(|u| u == raw) {
            parsed.push(raw.to_owned());
        }
    }
    let secret = secret.filter(|s| !s.trim().is_empty());
    if !parsed.is_empty() && secret.is_none() {
        return Err(ConfigError::new(
            "ROSTER_NOTIFY_SECRET",
            "required with ROSTER_NOTIFY_URLS: notifications are signed with it",
        ));
    }
    Ok(NotifySettings {
        urls: parsed,
        secret: secret.map(SecretString::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_max_bytes_should_read_sizes_and_refuse_nonsense() {
        assert_eq!(parse_history_max_bytes("1GiB").ok(), Some(1 << 30));
        assert_eq!(parse_history_max_bytes(" 500 MiB ").ok(), Some(500 << 20));
        assert_eq!(parse_history_max_bytes("2GB").ok(), Some(2_000_000_000));
        assert_eq!(parse_history_max_bytes("2097152").ok(), Some(2 << 20));
        assert_eq!(parse_history_max_bytes("").ok(), Some(1 << 30));
        for bad in ["lots", "1.5GiB", "-1GiB", "1XB", "99999999999999999999"] {
            let error = parse_history_max_bytes(bad).unwrap_err();
            assert_eq!(error.setting, "ROSTER_HISTORY_MAX_BYTES", "{bad:?}");
            assert!(error.message.contains("is not a size"), "{bad:?}: {error}");
        }
        assert_eq!(
            parse_history_max_bytes("1KiB").unwrap_err().to_string(),
            "ROSTER_HISTORY_MAX_BYTES: must be at least 1MiB"
        );
    }

    #[test]
    fn history_retention_should_default_sensibly_and_refuse_nonsense() {
        assert_eq!(
            parse_history_retention("90d").ok(),
            Some(Duration::from_secs(90 * 86_400))
        );
        let short = parse_history_retention("5m").unwrap_err();
        assert_eq!(
            short.to_string(),
            "ROSTER_HISTORY_RETENTION: must be at least 1h"
        );
        assert!(parse_history_retention("soon").is_err());
    }

    #[test]
    fn notify_should_split_urls_and_require_a_secret() {
        let ok = parse_notify(
            Some(" http://a/x, https://b/y ,,http://a/x"),
            Some("s".into()),
        )
        .expect("valid");
        assert_eq!(
            ok.urls,
            vec!["http://a/x".to_owned(), "https://b/y".to_owned()]
        );
        let no_secret = parse_notify(Some("http://a/x"), None).unwrap_err();
        assert_eq!(no_secret.setting, "ROSTER_NOTIFY_SECRET");
        let bad = parse_notify(Some("ftp://a/x"), Some("s".into())).unwrap_err();
        assert_eq!(bad.setting, "ROSTER_NOTIFY_URLS");
        assert!(parse_notify(None, None).expect("none").urls.is_empty());
    }
}
