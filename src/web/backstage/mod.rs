//! `GET /api/v1/backstage/entities.yaml`: the registry as Backstage catalog
//! entities (docs/backstage.md), one `Component` per entry, one `System`
//! per system and one `Group` per team that owns one, for a Backstage
//! `url` location to read as it is.
//!
//! A catalog polls it every few minutes, so it answers with an `ETag` made
//! from [`export_version`] (the change log's head and the repositories'
//! last change, never the entries), and a poll whose `If-None-Match` still
//! matches gets `304` without another read. Otherwise the body is written
//! as the registry is read ([`body`]), never built whole, and gzipped
//! ([`gzip`]) for a reader that accepts it.

mod body;
mod entity;
mod gzip;
mod names;
mod printable;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, ErrorJson};
use super::privacy::Privacy;
use super::state::AppState;
use crate::registry::read_models::export::export_version;

/// Changes whenever what a version of the registry exports as does (the
/// mapping of this module), so a catalog holding an older export reads
/// the new one.
const FORMAT: &str = "b2";

/// `GET /api/v1/backstage/entities.yaml`.
#[utoipa::path(get, path = "/api/v1/backstage/entities.yaml", operation_id = "get_backstage_entities",
    tag = "registry", security((), ("token" = [])),
    params(("If-None-Match" = Option<String>, Header,
            description = "The `ETag` of the export a catalog already holds")),
    responses(
        (status = 200, description = "Multi-document YAML: a comment counting what is left out, \
            then one Component per project, one System per system and one Group per team \
            that owns one; gzip-compressed when `Accept-Encoding` accepts it",
         content_type = "application/yaml", body = String,
         headers(("ETag" = String, description = "Changes whenever the export does, one per form"),
                 ("Vary" = String, description = "`accept-encoding`: the answer is gzipped when accepted"))),
        (status = 304, description = "Unchanged since the export whose `ETag` was sent"),
        (status = 503, description = "The database is unavailable", body = ErrorJson)))]
pub async fn entities(
    privacy: Privacy,
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let version = export_version(&state.pool).await?;
    // Readers with and without credentials see different owners, and a
    // team that turns secret changes what the latter see without a change
    // to any entry: the tag says which view it is of.
    // The gzipped form is another representation: its own tag.
    let gzipped = gzip::accepted(&headers);
    let etag = format!(
        "\"{FORMAT}-{}-{}{}\"",
        version.token(),
        privacy.fingerprint(),
        if gzipped { "-gz" } else { "" }
    );
    let etag_value = HeaderValue::from_str(&etag).map_err(|_| ApiError::Internal)?;
    let vary = (header::VARY, HeaderValue::from_static("accept-encoding"));
    if matches(&headers, &etag) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag_value), vary]).into_response());
    }
    let mut response = (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/yaml; charset=utf-8"),
            ),
            (header::ETAG, etag_value),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            vary,
        ],
        (),
    )
        .into_response();
    let chunks = body::chunks(state.pool.clone(), privacy);
    *response.body_mut() = if gzipped {
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        Body::from_stream(gzip::compressed(chunks))
    } else {
        Body::from_stream(chunks)
    };
    Ok(response)
}

/// Whether `If-None-Match` names `etag` (or is `*`); a weak tag matches
/// its strong form, as RFC 9110 asks of `If-None-Match`.
fn matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim())
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(header::IF_NONE_MATCH, value);
        }
        headers
    }

    #[test]
    fn if_none_match_should_match_its_tag_in_a_list_weak_or_strong() {
        let etag = "\"b1-7-1f\"";
        assert!(matches(&with("\"b1-7-1f\""), etag));
        assert!(matches(&with("\"x\", W/\"b1-7-1f\""), etag));
        assert!(matches(&with("*"), etag));
        assert!(!matches(&with("\"b1-6-1f\""), etag));
        assert!(!matches(&HeaderMap::new(), etag));
    }
}
