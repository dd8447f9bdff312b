//! `GET /metrics`: the Prometheus exposition (docs/operations.md#metrics).
//!
//! `prometheus_client` writes OpenMetrics, which a scraper gets when it
//! asks for it (`Accept: application/openmetrics-text`). Everyone else
//! (`promtool check metrics`, `curl`, older scrapers) gets the Prometheus
//! text format, which differs in a few lines: a counter is declared under
//! its sample's name (`_total`), there is no `# UNIT`, no `# EOF` and no
//! `_created` sample, and the types OpenMetrics adds are `gauge` or
//! `untyped` there.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;

use super::state::AppState;
use crate::registry;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Refreshes `roster_repos` and `roster_holds` from the database, then
/// encodes every metric in the format the scraper asked for.
/// A database failure keeps the last counts: the other metrics still help.
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match registry::status_counts(&state.pool).await {
        Ok(counts) => state.metrics.set_repo_counts(&counts),
        Err(error) => tracing::warn!(%error, "metrics: cannot count repositories per status"),
    }
    match registry::active_hold_count(&state.pool).await {
        Ok(holds) => state.metrics.set_active_holds(holds),
        Err(error) => tracing::warn!(%error, "metrics: cannot count active holds"),
    }
    let mut body = String::new();
    if let Err(error) = encode(&mut body, &state.registry) {
        tracing::error!(%error, "metrics: encoding failed");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    if asks_for_openmetrics(&headers) {
        ([(header::CONTENT_TYPE, OPENMETRICS)], body).into_response()
    } else {
        let text = prometheus_text(&body);
        ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], text).into_response()
    }
}

/// Whether `Accept` names `application/openmetrics-text` with a weight
/// above zero.
fn asks_for_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
}

/// The Prometheus text format (0.0.4) of an OpenMetrics exposition.
fn prometheus_text(openmetrics: &str) -> String {
    let types: HashMap<&str, &str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let kept = if let Some(rest) = line.strip_prefix("# HELP ") {
            let (family, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let kind = types.get(family).copied().unwrap_or("unknown");
            format!("# HELP {} {help}", sample_name(family, kind))
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            format!(
                "# TYPE {} {}",
                sample_name(family, kind),
                prometheus_type(kind)
            )
        } else if is_created_sample(line, &types) {
            continue;
        } else {
            line.to_owned()
        };
        text.push_str(&kept);
        text.push('\n');
    }
    text
}

/// The name a family's samples carry, which the Prometheus format
/// declares: a counter's with `_total`, an info's with `_info`.
fn sample_name(family: &str, kind: &str) -> String {
    match kind {
        "counter" if !family.ends_with("_total") => format!("{family}_total"),
        "info" if !family.ends_with("_info") => format!("{family}_info"),
        _ => family.to_owned(),
    }
}

/// The Prometheus type for an OpenMetrics one.
fn prometheus_type(kind: &str) -> &'static str {
    match kind {
        "counter" => "counter",
        "gauge" | "info" | "stateset" => "gauge",
        "histogram" => "histogram",
        "summary" => "summary",
        _ => "untyped",
    }
}

/// Whether `line` is a counter's, histogram's or summary's `_created`
/// sample, which the Prometheus format does not have.
fn is_created_sample(line: &str, types: &HashMap<&str, &str>) -> bool {
    let name = line.split(['{', ' ']).next().unwrap_or("");
    name.strip_suffix("_created")
        .and_then(|family| types.get(family))
        .is_some_and(|kind| matches!(*kind, "counter" | "histogram" | "summary"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn openmetrics_should_be_answered_only_to_who_asks_for_it() {
        assert!(asks_for_openmetrics(&accept(
            "application/openmetrics-text"
        )));
        assert!(asks_for_openmetrics(&accept(
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        )));
        assert!(!asks_for_openmetrics(&HeaderMap::new()));
        assert!(!asks_for_openmetrics(&accept("*/*")));
        assert!(!asks_for_openmetrics(&accept("text/plain; version=0.0.4")));
        assert!(!asks_for_openmetrics(&accept(
            "application/openmetrics-text; q=0"
        )));
    }

    #[test]
    fn the_prometheus_text_should_declare_counters_under_their_sample_names() {
        let openmetrics = "# HELP roster_queue_adds Keys enqueued.\n\
                           # TYPE roster_queue_adds counter\n\
                           roster_queue_adds_total 3\n\
                           roster_queue_adds_created 1700000000.0\n\
                           # HELP roster_seconds Time.\n\
                           # TYPE roster_seconds histogram\n\
                           # UNIT roster_seconds seconds\n\
                           roster_seconds_bucket{le=\"+Inf\"} 1\n\
                           roster_seconds_count 1\n\
                           # HELP roster_odd Odd.\n\
                           # TYPE roster_odd unknown\n\
                           roster_odd 1\n\
                           # EOF\n";
        assert_eq!(
            prometheus_text(openmetrics),
            "# HELP roster_queue_adds_total Keys enqueued.\n\
             # TYPE roster_queue_adds_total counter\n\
             roster_queue_adds_total 3\n\
             # HELP roster_seconds Time.\n\
             # TYPE roster_seconds histogram\n\
             roster_seconds_bucket{le=\"+Inf\"} 1\n\
             roster_seconds_count 1\n\
             # HELP roster_odd Odd.\n\
             # TYPE roster_odd untyped\n\
             roster_odd 1\n"
        );
    }
}
