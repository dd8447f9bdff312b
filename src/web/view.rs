//! Display helpers for the dashboard: what the templates show, computed in
//! Rust so the templates stay plain markup. Every string here is still
//! HTML-escaped by the templates; these helpers never produce markup.

use chrono::{DateTime, Utc};

use super::delivery_log::DeliveryRecord;
use crate::registry::Status;

/// A status as the dashboard shows it: its name always, a symbol and a
/// colour (the CSS class) only repeating it, for readers who cannot tell
/// the colours apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusView {
    pub name: &'static str,
    pub symbol: &'static str,
}

impl From<Status> for StatusView {
    fn from(status: Status) -> Self {
        let symbol = match status {
            Status::Pending => "…",
            Status::Synced => "✓",
            Status::NoFile => "∅",
            Status::Invalid => "!",
            Status::Conflict => "⇄",
            Status::Error => "✗",
            Status::Removed => "−",
        };
        Self {
            name: status.as_str(),
            symbol,
        }
    }
}

/// The first 7 characters of a commit sha, as GitHub abbreviates it.
pub fn short_sha(sha: Option<&str>) -> String {
    sha.map(|sha| sha.chars().take(7).collect())
        .unwrap_or_default()
}

/// The first line of an error, for a table cell; the detail page shows all.
pub fn first_line(text: Option<&str>) -> String {
    text.and_then(|text| text.lines().next())
        .unwrap_or_default()
        .to_owned()
}

/// An exact time for people, to the second, in UTC.
pub fn format_time(at: Option<DateTime<Utc>>) -> String {
    at.map(|at| at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

/// A moment as the pages show it: relative text ("3 min ago"), the exact
/// time on hover and a machine-readable `datetime`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeView {
    /// RFC 3339, for `<time datetime>`.
    pub iso: String,
    /// For the `title` (shown on hover).
    pub exact: String,
    pub text: String,
}

impl TimeView {
    pub fn new(at: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        Self {
            iso: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            exact: format_time(Some(at)),
            text: relative(at, now),
        }
    }

    pub fn maybe(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<Self> {
        at.map(|at| Self::new(at, now))
    }
}

/// `at` relative to `now`, coarse enough to read at a glance:
/// "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago", or "in 4 min".
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - at).num_seconds();
    let span = duration_text(seconds.unsigned_abs());
    if seconds.abs() < 5 {
        "just now".to_owned()
    } else if seconds > 0 {
        format!("{span} ago")
    } else {
        format!("in {span}")
    }
}

/// A length of time in its largest fitting unit: "42 s", "5 min", "3 h", "2 d".
pub fn duration_text(seconds: u64) -> String {
    match seconds {
        0..=59 => format!("{seconds} s"),
        60..=3_599 => format!("{} min", seconds / 60),
        3_600..=172_799 => format!("{} h", seconds / 3_600),
        _ => format!("{} d", seconds / 86_400),
    }
}

/// A whole number with thousands separators (`12,345`), for counts.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved).
pub fn path_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The dashboard link of a repository given as `owner/name`.
pub fn repo_href(full_name: &str) -> String {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, ""));
    format!("/repos/{}/{}", path_segment(owner), path_segment(name))
}

/// `path?query` from the non-empty pairs (just `path` when none is left).
pub fn href_with(path: &str, pairs: &[(&str, Option<&str>)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (key, value) in pairs {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            query.append_pair(key, value);
            any = true;
        }
    }
    if any {
        format!("{path}?{}", query.finish())
    } else {
        path.to_owned()
    }
}

/// A page on the source's website: `{base}/{owner}/{name}` followed by
/// `rest` (already encoded path segments), when `base` is an http(s) URL.
pub fn web_link(base: Option<&str>, full_name: &str, rest: &[&str]) -> Option<String> {
    let base = base?.trim_end_matches('/');
    let (owner, name) = full_name.split_once('/')?;
    let mut link = format!("{base}/{}/{}", path_segment(owner), path_segment(name));
    for segment in rest {
        link.push('/');
        link.push_str(segment);
    }
    http_url(&link)
}

/// The commit `sha` of `full_name` on the source's website.
pub fn commit_link(base: Option<&str>, full_name: &str, sha: &str) -> Option<String> {
    if sha.is_empty() {
        return None;
    }
    web_link(base, full_name, &["commit", &path_segment(sha)])
}

/// The project file at the head of `branch` (GitHub's `HEAD` when the
/// branch is unknown) on the source's website; `file` may hold folders.
pub fn project_file_link(
    base: Option<&str>,
    full_name: &str,
    branch: Option<&str>,
    file: &str,
) -> Option<String> {
    let branch = path_segment(branch.filter(|b| !b.is_empty()).unwrap_or("HEAD"));
    let file: Vec<String> = file
        .split('/')
        .filter(|s| !s.is_empty())
        .map(path_segment)
        .collect();
    if file.is_empty() {
        return None;
    }
    let mut rest = vec!["blob", branch.as_str()];
    rest.extend(file.iter().map(String::as_str));
    web_link(base, full_name, &rest)
}

/// `url` when it is an absolute http(s) URL, the only links the dashboard
/// renders from repository data (no `javascript:`, no `data:`).
pub fn http_url(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    matches!(parsed.scheme(), "http" | "https").then(|| parsed.to_string())
}

/// A webhook delivery, on a repository's page and on `/deliveries`.
pub struct DeliveryView {
    pub at: TimeView,
    pub id: String,
    /// `event.action`, or the event alone.
    pub event: String,
    /// (dashboard link, `owner/name`).
    pub repo: Option<(String, String)>,
    pub outcome: String,
    pub redelivery_requested: bool,
}

impl DeliveryView {
    pub fn new(delivery: DeliveryRecord, now: DateTime<Utc>) -> Self {
        let event = match delivery.action {
            Some(action) => format!("{}.{action}", delivery.event),
            None => delivery.event,
        };
        Self {
            at: TimeView::new(delivery.at, now),
            id: delivery.id,
            event,
            repo: delivery.repo.map(|repo| (repo_href(&repo), repo)),
            outcome: delivery.outcome,
            redelivery_requested: delivery.redelivery_requested,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_should_become_links() {
        assert_eq!(
            http_url("https://example.com/a").as_deref(),
            Some("https://example.com/a")
        );
        assert_eq!(
            http_url("http://example.com/").as_deref(),
            Some("http://example.com/")
        );
        for bad in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,x",
            "/relative",
            "ftp://x",
        ] {
            assert_eq!(http_url(bad), None, "{bad}");
        }
    }

    #[test]
    fn path_segment_should_encode_everything_but_unreserved() {
        assert_eq!(path_segment("my-repo.rs_1~"), "my-repo.rs_1~");
        assert_eq!(path_segment("a b/c?<"), "a%20b%2Fc%3F%3C");
        assert_eq!(repo_href("local/x y"), "/repos/local/x%20y");
    }

    #[test]
    fn href_should_skip_empty_parameters() {
        assert_eq!(href_with("/", &[("status", None), ("q", Some(""))]), "/");
        assert_eq!(
            href_with("/", &[("status", Some("error")), ("q", Some("a&b"))]),
            "/?status=error&q=a%26b"
        );
    }

    #[test]
    fn relative_time_should_read_at_a_glance() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        let at = |secs: i64| now - chrono::Duration::seconds(secs);
        assert_eq!(relative(at(2), now), "just now");
        assert_eq!(relative(at(42), now), "42 s ago");
        assert_eq!(relative(at(5 * 60 + 10), now), "5 min ago");
        assert_eq!(relative(at(3 * 3600), now), "3 h ago");
        assert_eq!(relative(at(3 * 86_400), now), "3 d ago");
        assert_eq!(relative(at(-240), now), "in 4 min");
        let view = TimeView::new(at(60), now);
        assert_eq!(view.iso, "2023-11-14T22:12:20Z");
        assert_eq!(view.exact, "2023-11-14 22:12:20 UTC");
    }

    #[test]
    fn thousands_should_group_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(-4200), "-4,200");
    }

    #[test]
    fn web_links_should_be_encoded_and_only_with_a_base() {
        let base = Some("https://github.com/");
        assert_eq!(
            commit_link(base, "acme/api", "abc123").as_deref(),
            Some("https://github.com/acme/api/commit/abc123")
        );
        assert_eq!(commit_link(None, "acme/api", "abc123"), None);
        assert_eq!(commit_link(base, "acme/api", ""), None);
        assert_eq!(
            project_file_link(base, "acme/api", Some("main"), ".github/project.yaml").as_deref(),
            Some("https://github.com/acme/api/blob/main/.github/project.yaml")
        );
        assert_eq!(
            project_file_link(base, "acme/a b", None, "project.yaml").as_deref(),
            Some("https://github.com/acme/a%20b/blob/HEAD/project.yaml")
        );
        assert_eq!(web_link(Some("javascript:x"), "acme/api", &[]), None);
    }

    #[test]
    fn short_sha_and_first_line_should_shorten() {
        assert_eq!(short_sha(Some("0123456789abcdef")), "0123456");
        assert_eq!(short_sha(None), "");
        assert_eq!(first_line(Some("a: one\nb: two")), "a: one");
    }
}
