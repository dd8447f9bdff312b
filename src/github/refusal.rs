//! A GraphQL query GitHub refuses for its size or the time it takes: a
//! 502 or 504, a timeout, "Something went wrong while executing your
//! query. This may be the result of a timeout", or an error of type
//! `RESOURCE_LIMITS_EXCEEDED`. The same question asked for fewer
//! repositories usually passes, so the listing and the batch read ask again
//! with half as many, down to one.

use super::graphql::GraphqlError;
use super::http::CallError;

/// Texts of GitHub's refusals, compared without regard to case.
const MARKERS: &[&str] = &[
    "something went wrong while executing your query",
    "may be the result of a timeout",
    "resource limits",
    "resource_limits_exceeded",
];

/// Whether `error` is GitHub refusing the query for its size or time.
pub fn is_refusal(error: &CallError) -> bool {
    match error {
        CallError::Timeout { .. } => true,
        CallError::Status { status, .. } => matches!(status, 502 | 504),
        CallError::Unexpected { message, .. } => has_marker(message),
        _ => false,
    }
}

/// Whether an error inside an answer refuses the query for its size or time.
pub fn is_refusing(error: &GraphqlError) -> bool {
    error.kind.as_deref() == Some("RESOURCE_LIMITS_EXCEEDED") || has_marker(&error.message)
}

/// A refused query as an error (from the errors inside its answer).
pub fn refused(what: &str, errors: &[GraphqlError]) -> CallError {
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    CallError::unexpected(
        what,
        format!("RESOURCE_LIMITS_EXCEEDED: {}", messages.join("; ")),
    )
}

fn has_marker(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    MARKERS.iter().any(|m| lower.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn githubs_refusals_should_be_told_from_other_errors() {
        let timeout = CallError::unexpected(
            "POST /graphql",
            "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug.",
        );
        assert!(is_refusal(&timeout));
        let bad_gateway = CallError::Status {
            what: "POST /graphql".into(),
            status: 502,
            message: String::new(),
        };
        assert!(is_refusal(&bad_gateway));
        let not_found = CallError::Status {
            what: "POST /graphql".into(),
            status: 404,
            message: String::new(),
        };
        assert!(!is_refusal(&not_found));
        assert!(!is_refusal(&CallError::unexpected(
            "x",
            "no data in the answer"
        )));
        let limits: GraphqlError = serde_json::from_value(serde_json::json!({
            "type": "RESOURCE_LIMITS_EXCEEDED", "message": "Query exceeded limits"
        }))
        .expect("an error");
        assert!(is_refusing(&limits));
        assert!(is_refusal(&refused("x", &[limits])));
    }
}
