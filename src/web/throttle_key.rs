//! Who a request comes from, as the failure throttle counts clients
//! (docs/contract.md#bounds): one IPv4 address, or one IPv6 /64. A single IPv6 host is
//! usually given a whole /64, so counting its addresses one by one would
//! give it more tries than there are atoms; an IPv4-mapped IPv6 address
//! (a dual-stack listener's view of an IPv4 client) is that IPv4 address.

use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;

use super::forwarded::client_address;
use super::serve::ClientAddr;

/// A client as the throttle counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// The first 64 bits of an IPv6 address, the rest set to zero.
    V6Net(Ipv6Addr),
    /// A request whose address is not known (served without
    /// [`crate::web::serve::serve`], as in tests): all such share one key.
    Unknown,
}

impl ClientKey {
    /// The key of a client with address `address`.
    pub fn of(address: Option<IpAddr>) -> Self {
        match address {
            None => Self::Unknown,
            Some(IpAddr::V4(v4)) => Self::V4(v4),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::V4(v4),
                None => Self::V6Net(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
            },
        }
    }

    /// The address that stands for this client (an IPv6 /64 by its
    /// network), or `None` when it is not known.
    pub fn address(self) -> Option<IpAddr> {
        match self {
            Self::V4(v4) => Some(IpAddr::V4(v4)),
            Self::V6Net(net) => Some(IpAddr::V6(net)),
            Self::Unknown => None,
        }
    }
}

impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::V4(v4) => write!(f, "{v4}"),
            Self::V6Net(net) => write!(f, "{net}/64"),
            Self::Unknown => f.write_str("unknown"),
        }
    }
}

/// The client of a request: its TCP peer, or the address a trusted proxy
/// names (see [`crate::web::forwarded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client(pub ClientKey);

/// Whether `X-Forwarded-*` headers name the client (`ROSTER_TRUST_PROXY`):
/// what [`Client`] needs of the server's state, so the extractor works on
/// any state that can give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustProxy(pub bool);

impl<S> FromRequestParts<S> for Client
where
    TrustProxy: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Infallible> {
        let TrustProxy(trust) = TrustProxy::from_ref(state);
        Ok(Self(client_of(parts, trust)))
    }
}

/// The client of a request with these parts.
pub fn client_of(parts: &Parts, trust_proxy: bool) -> ClientKey {
    client_in(&parts.headers, &parts.extensions, trust_proxy)
}

/// The client of a request with these headers and extensions.
pub fn client_in(
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
    trust_proxy: bool,
) -> ClientKey {
    let peer = extensions.get::<ClientAddr>().map(|ClientAddr(ip)| *ip);
    ClientKey::of(client_address(headers, peer, trust_proxy))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> ClientKey {
        ClientKey::of(text.parse().ok())
    }

    #[test]
    fn ipv6_addresses_should_count_by_their_64() {
        assert_eq!(
            key("2001:db8:1:2::1"),
            key("2001:db8:1:2:ffff:eeee:dddd:cccc")
        );
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("2001:db8:1:2:abcd::1").to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn ipv4_addresses_should_count_one_by_one() {
        assert_ne!(key("192.0.2.1"), key("192.0.2.2"));
        assert_eq!(key("192.0.2.1").to_string(), "192.0.2.1");
    }

    #[test]
    fn an_ipv4_mapped_address_should_be_the_ipv4_address() {
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
        assert_ne!(key("::ffff:192.0.2.1"), key("::ffff:192.0.2.2"));
    }

    #[test]
    fn an_unknown_address_should_have_its_own_key() {
        assert_eq!(ClientKey::of(None), ClientKey::Unknown);
        assert_eq!(ClientKey::Unknown.to_string(), "unknown");
    }
}
