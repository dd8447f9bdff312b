//! What a request says about its client, its host and its scheme, taking
//! the `X-Forwarded-*` headers into account only when the operator said a
//! proxy writes them (`ROSTER_TRUST_PROXY=true`, docs/contract.md#bounds). Without a proxy
//! anyone can write those headers, so trusting them would let a client pick
//! its own address (and escape the failure throttle) or its own host (and
//! pass the same-origin check from another site).
//!
//! Of a list (`X-Forwarded-For: a, b, c`, or several headers), the
//! **right-most** entry counts: it is the one the proxy in front of Roster
//! wrote itself, from the connection it accepted. Entries further left came
//! from earlier hops, or from the client, and cannot be told apart.

use std::net::{IpAddr, SocketAddr};

use axum::http::header::HOST;
use axum::http::HeaderMap;

/// Header a proxy puts the address of its own client in.
const FORWARDED_FOR: &str = "x-forwarded-for";
/// Header a proxy puts the `Host` it was asked for in.
const FORWARDED_HOST: &str = "x-forwarded-host";
/// Header a proxy puts the scheme it was reached by in.
const FORWARDED_PROTO: &str = "x-forwarded-proto";

/// The client's address: the TCP peer, or with `trust` the right-most
/// `X-Forwarded-For` entry (the peer when there is none or it is not an
/// address).
pub fn client_address(headers: &HeaderMap, peer: Option<IpAddr>, trust: bool) -> Option<IpAddr> {
    if !trust {
        return peer;
    }
    right_most(headers, FORWARDED_FOR)
        .and_then(parse_address)
        .or(peer)
}

/// The host (with port, if any) the client sent the request to: `Host`, or
/// with `trust` the right-most `X-Forwarded-Host` when there is one.
pub fn target_host(headers: &HeaderMap, trust: bool) -> Option<&str> {
    trust
        .then(|| right_most(headers, FORWARDED_HOST))
        .flatten()
        .or_else(|| headers.get(HOST)?.to_str().ok())
}

/// Whether a trusted proxy says the client reached it over https.
pub fn forwarded_https(headers: &HeaderMap, trust: bool) -> bool {
    trust
        && right_most(headers, FORWARDED_PROTO)
            .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// The last comma-separated entry of the last `name` header, trimmed;
/// `None` when the header is absent, not text, or that entry is empty.
fn right_most<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let last = headers.get_all(name).into_iter().next_back()?;
    let entry = last.to_str().ok()?.rsplit(',').next()?.trim();
    (!entry.is_empty()).then_some(entry)
}

/// An address as proxies write it: `203.0.113.7`, `2001:db8::1`, or with a
/// port (`203.0.113.7:4711`, `[2001:db8::1]:4711`).
fn parse_address(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|a| a.ip()))
}

#[cfg(test)]
pub(super) mod tests {
    use axum::http::HeaderValue;

    use super::*;

    /// A header map of `pairs`, in order (a name may come twice).
    pub(in crate::web) fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    fn ip(text: &str) -> Option<IpAddr> {
        text.parse().ok()
    }

    #[test]
    fn forwarded_for_should_be_ignored_unless_trusted() {
        let forged = headers(&[("x-forwarded-for", "198.51.100.9")]);
        let peer = ip("192.0.2.1");
        assert_eq!(client_address(&forged, peer, false), peer);
        assert_eq!(client_address(&forged, peer, true), ip("198.51.100.9"));
    }

    #[test]
    fn the_right_most_forwarded_for_entry_should_count() {
        let peer = ip("10.0.0.2");
        let cases = [
            (
                headers(&[("x-forwarded-for", "1.1.1.1, 203.0.113.7")]),
                "203.0.113.7",
            ),
            (
                headers(&[
                    ("x-forwarded-for", "1.1.1.1"),
                    ("x-forwarded-for", "2.2.2.2,203.0.113.8"),
                ]),
                "203.0.113.8",
            ),
            (
                headers(&[("x-forwarded-for", "203.0.113.9:4711")]),
                "203.0.113.9",
            ),
            (
                headers(&[("x-forwarded-for", "[2001:db8::1]:443")]),
                "2001:db8::1",
            ),
            (
                headers(&[("x-forwarded-for", " 2001:db8::2 ")]),
                "2001:db8::2",
            ),
        ];
        for (map, expected) in &cases {
            assert_eq!(client_address(map, peer, true), ip(expected), "{map:?}");
        }
    }

    #[test]
    fn a_missing_or_unreadable_forwarded_for_should_leave_the_peer() {
        let peer = ip("10.0.0.2");
        for map in [
            headers(&[]),
            headers(&[("x-forwarded-for", "")]),
            headers(&[("x-forwarded-for", "1.1.1.1, ")]),
            headers(&[("x-forwarded-for", "unknown")]),
            headers(&[("x-forwarded-for", "1.1.1.1, _hidden")]),
        ] {
            assert_eq!(client_address(&map, peer, true), peer, "{map:?}");
        }
    }

    #[test]
    fn the_target_host_should_be_host_unless_a_trusted_proxy_names_another() {
        let proxied = headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "evil.example, roster.example"),
        ]);
        assert_eq!(target_host(&proxied, false), Some("10.0.0.5:8080"));
        assert_eq!(target_host(&proxied, true), Some("roster.example"));
        let direct = headers(&[("host", "roster.example")]);
        assert_eq!(target_host(&direct, true), Some("roster.example"));
        assert_eq!(target_host(&headers(&[]), true), None);
    }

    #[test]
    fn forwarded_proto_should_count_only_when_trusted() {
        let https = headers(&[("x-forwarded-proto", "http, HTTPS")]);
        assert!(forwarded_https(&https, true));
        assert!(!forwarded_https(&https, false));
        let http = headers(&[("x-forwarded-proto", "https, http")]);
        assert!(!forwarded_https(&http, true));
    }
}
