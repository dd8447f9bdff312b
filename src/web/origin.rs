//! Where a dashboard form was sent from, and over what: the dashboard's
//! guard against cross-site requests (docs/contract.md#http-routes) and its choice of a
//! `Secure` cookie. The host a request was sent to is `Host`, or what a
//! trusted proxy says (see [`crate::web::forwarded`]).

use axum::http::header::{ORIGIN, REFERER};
use axum::http::HeaderMap;

use super::forwarded::{forwarded_https, target_host};

/// Whether a POST comes from a page of this server: its `Origin` (or, when
/// a browser sends none, its `Referer`) names the host the request was sent
/// to. A request with neither is refused.
pub fn same_origin(headers: &HeaderMap, trust_proxy: bool) -> bool {
    let source = headers
        .get(ORIGIN)
        .or_else(|| headers.get(REFERER))
        .and_then(|value| value.to_str().ok())
        .and_then(|value| url::Url::parse(value).ok());
    let Some(source) = source else {
        return false;
    };
    let Some(host) = source.host_str() else {
        return false;
    };
    let Some(target) = target_host(headers, trust_proxy) else {
        return false;
    };
    let authority = match source.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let with_default_port = source
        .port_or_known_default()
        .map(|port| format!("{host}:{port}"));
    target.eq_ignore_ascii_case(&authority)
        || with_default_port
            .as_deref()
            .is_some_and(|full| target.eq_ignore_ascii_case(full))
}

/// Whether the browser reached this server over https (as the origin of
/// the request, or a trusted proxy, shows), so the cookie may be marked
/// `Secure`.
pub fn over_https(headers: &HeaderMap, trust_proxy: bool) -> bool {
    headers
        .get(ORIGIN)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|origin| origin.starts_with("https://"))
        || forwarded_https(headers, trust_proxy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::forwarded::tests::headers;

    #[test]
    fn same_origin_should_compare_origin_or_referer_with_the_host() {
        let ok = [
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://roster.example"),
            ]),
            headers(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:8080"),
            ]),
            headers(&[
                ("host", "roster.example:443"),
                ("origin", "https://roster.example"),
            ]),
            headers(&[
                ("host", "roster.example"),
                ("referer", "https://roster.example/repos/a/b"),
            ]),
        ];
        for h in &ok {
            assert!(same_origin(h, false), "{h:?}");
            assert!(same_origin(h, true), "{h:?}");
        }
        let refused = [
            headers(&[("host", "roster.example")]),
            headers(&[("origin", "https://roster.example")]),
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://evil.example"),
            ]),
            headers(&[("host", "roster.example"), ("origin", "null")]),
            headers(&[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://127.0.0.1:9090"),
            ]),
            headers(&[
                ("host", "roster.example"),
                ("origin", "https://evil.example"),
                ("referer", "https://roster.example/"),
            ]),
        ];
        for h in &refused {
            assert!(!same_origin(h, false), "{h:?}");
            assert!(!same_origin(h, true), "{h:?}");
        }
    }

    #[test]
    fn a_forwarded_host_should_count_only_behind_a_trusted_proxy() {
        let proxied = headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "roster.example"),
            ("origin", "https://roster.example"),
        ]);
        assert!(!same_origin(&proxied, false));
        assert!(same_origin(&proxied, true));
        // Forged to match another site's origin: refused unless trusted.
        let forged = headers(&[
            ("host", "roster.example"),
            ("x-forwarded-host", "evil.example"),
            ("origin", "https://evil.example"),
        ]);
        assert!(!same_origin(&forged, false));
        // A trusted proxy's host replaces `Host`: the internal name no
        // longer passes.
        let internal = headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "roster.example"),
            ("origin", "http://10.0.0.5:8080"),
        ]);
        assert!(same_origin(&internal, false));
        assert!(!same_origin(&internal, true));
    }

    #[test]
    fn https_should_show_in_the_origin_or_a_trusted_forwarded_proto() {
        assert!(over_https(
            &headers(&[("origin", "https://roster.example")]),
            false
        ));
        assert!(!over_https(
            &headers(&[("origin", "http://roster.example")]),
            false
        ));
        let proxied = headers(&[
            ("origin", "http://roster.example"),
            ("x-forwarded-proto", "https"),
        ]);
        assert!(!over_https(&proxied, false));
        assert!(over_https(&proxied, true));
    }
}
