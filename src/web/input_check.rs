//! Every query and path value a route reads is text Roster can store and
//! show: checked once, in a layer before any handler, so that no handler
//! can pass a NUL to PostgreSQL (which refuses it, and the request became
//! a 503) nor echo a control character back (docs/contract.md#lists-and-pages).
//!
//! A value that is not UTF-8, holds a control character (C0, DEL, C1) or is
//! longer than [`MAX_VALUE_CHARS`] answers 400 naming its parameter: JSON
//! under `/api/`, an error page elsewhere.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::dashboard::PageError;
use super::error::ApiError;

/// Longest value, in characters once percent-decoded, of a query parameter
/// or a path segment: far above any name, filter or cursor Roster hands
/// out. The OpenAPI document states it as `maxLength`.
pub const MAX_VALUE_CHARS: usize = 1024;

/// The layer's function: refuses a request whose query or path holds bad
/// text, passes every other one on.
pub async fn check(matched: Option<MatchedPath>, request: Request, next: Next) -> Response {
    let uri = request.uri();
    let template = matched.as_ref().map(MatchedPath::as_str);
    let problem = template
        .and_then(|template| path_problem(template, uri.path()))
        .or_else(|| uri.query().and_then(query_problem));
    match problem {
        None => next.run(request).await,
        Some(message) if uri.path().starts_with("/api/") => {
            ApiError::BadRequest(message).into_response()
        }
        Some(message) => PageError::from(ApiError::BadRequest(message)).into_response(),
    }
}

/// What is wrong with a path's parameters, read against the route's
/// template (`/repos/{owner}/{name}`), segment by segment.
pub fn path_problem(template: &str, path: &str) -> Option<String> {
    template
        .split('/')
        .zip(path.split('/'))
        .find_map(|(pattern, raw)| {
            let name = pattern.strip_prefix('{')?.strip_suffix('}')?;
            flaw(&percent_decode(raw, false)).map(|why| format!("{name}: {why}"))
        })
}

/// What is wrong with a query string: the first bad parameter name or value.
pub fn query_problem(query: &str) -> Option<String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .find_map(|pair| {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(raw_key, true);
            if let Some(why) = flaw(&key) {
                return Some(format!("query: a parameter's name {why}"));
            }
            let name: String = String::from_utf8_lossy(&key).chars().take(64).collect();
            flaw(&percent_decode(raw_value, true)).map(|why| format!("{name}: {why}"))
        })
}

/// Why `value` is no text Roster takes, if it is not.
fn flaw(value: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(value) else {
        return Some("is not UTF-8 text".to_owned());
    };
    let chars = text.chars().count();
    if chars > MAX_VALUE_CHARS {
        return Some(format!(
            "is longer than {MAX_VALUE_CHARS} characters ({chars})"
        ));
    }
    text.chars()
        .find(|c| c.is_control())
        .map(|c| format!("holds the control character U+{:04X}", u32::from(c)))
}

/// `%XX` decoded to its byte (and `+` to a space in a query); a `%` not
/// followed by two hex digits stays as it is, as the query parser reads it.
fn percent_decode(raw: &str, plus_is_space: bool) -> Vec<u8> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (byte, hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                // Two hex digits make at most 0xFF.
                out.push(u8::try_from(high * 16 + low).unwrap_or(u8::MAX));
                i += 3;
            }
            (b'+', _, _) if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_value_should_be_decoded_before_it_is_judged() {
        assert_eq!(query_problem("q=caf%C3%A9+%25&limit=5"), None);
        assert_eq!(query_problem("q=100%"), None);
        assert_eq!(
            query_problem("limit=5&q=a%00b").as_deref(),
            Some("q: holds the control character U+0000")
        );
        assert_eq!(
            query_problem("tag=%C2%85").as_deref(),
            Some("tag: holds the control character U+0085")
        );
        assert_eq!(
            query_problem("owner=%FF").as_deref(),
            Some("owner: is not UTF-8 text")
        );
        assert_eq!(
            query_problem("a%00=1").as_deref(),
            Some("query: a parameter's name holds the control character U+0000")
        );
        let long = format!("q={}", "x".repeat(MAX_VALUE_CHARS + 1));
        assert_eq!(
            query_problem(&long).as_deref(),
            Some("q: is longer than 1024 characters (1025)")
        );
        assert_eq!(
            query_problem(&format!("q={}", "é".repeat(MAX_VALUE_CHARS))),
            None
        );
    }

    #[test]
    fn a_path_segment_should_be_named_by_the_route_template() {
        let template = "/api/v1/repos/{owner}/{name}";
        assert_eq!(path_problem(template, "/api/v1/repos/local/svc"), None);
        assert_eq!(
            path_problem(template, "/api/v1/repos/local/a%7Fb").as_deref(),
            Some("name: holds the control character U+007F")
        );
        assert_eq!(
            path_problem(template, "/api/v1/repos/%E2%28/svc").as_deref(),
            Some("owner: is not UTF-8 text")
        );
        // A `+` in a path is a plus.
        assert_eq!(path_problem("/projects/{name}", "/projects/a+b"), None);
    }
}
