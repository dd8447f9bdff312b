//! Faults the fake GitHub can be told to answer with instead of the truth.

use std::time::Duration;

/// How a request goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// 500 Internal Server Error.
    ServerError,
    /// 502 Bad Gateway (GitHub's usual answer to a GraphQL query under load).
    BadGateway,
    /// 403 "You have exceeded a secondary rate limit" with `retry-after`.
    SecondaryRateLimit { retry_after: u64 },
    /// 429 Too Many Requests with `retry-after`.
    TooManyRequests { retry_after: u64 },
    /// 200 with a body that is not the JSON it should be.
    Garbage,
    /// Waits this long before answering normally.
    Slow(Duration),
    /// Does what the request asks at once, then waits this long before
    /// answering: the work is done even if the caller gave up.
    LateAnswer(Duration),
    /// Starts the answer, then drops the connection.
    Close,
    /// GraphQL: 200 with an error of type `RATE_LIMITED`.
    GraphqlRateLimited,
}

/// A fault, the requests it applies to, and how many more times.
#[derive(Debug, Clone)]
pub struct Fault {
    pub kind: FaultKind,
    /// Only requests of this route (see [`super::routes`]); any when `None`.
    pub route: Option<&'static str>,
    /// Only GraphQL listing requests for this page (1-based).
    pub graphql_page: Option<usize>,
    /// Requests left to spoil; `u32::MAX` never runs out.
    pub times: u32,
}

impl Fault {
    /// The next `times` requests (of any route) fail with `kind`.
    pub fn next(kind: FaultKind, times: u32) -> Self {
        Self {
            kind,
            route: None,
            graphql_page: None,
            times,
        }
    }

    /// Every request (matching the other filters) fails with `kind`.
    pub fn always(kind: FaultKind) -> Self {
        Self::next(kind, u32::MAX)
    }

    /// Only requests of `route`.
    pub fn on(mut self, route: &'static str) -> Self {
        self.route = Some(route);
        self
    }

    /// Only the GraphQL listing's page `page` (1-based).
    pub fn on_page(mut self, page: usize) -> Self {
        self.route = Some(super::routes::GRAPHQL);
        self.graphql_page = Some(page);
        self
    }

    /// Only the directory read's page `page` (1-based, teams or members).
    pub fn on_directory_page(mut self, page: usize) -> Self {
        self.route = Some(super::routes::GRAPHQL_DIRECTORY);
        self.graphql_page = Some(page);
        self
    }

    pub fn matches(&self, route: &str, page: Option<usize>) -> bool {
        self.times > 0
            && self.route.is_none_or(|r| r == route)
            && self.graphql_page.is_none_or(|p| Some(p) == page)
    }
}
