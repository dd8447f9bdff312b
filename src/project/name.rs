//! Project names: the registry's unique key, so only valid ones can exist.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest name accepted (a DNS label, so names fit in host names and URLs).
pub const MAX_NAME_CHARS: usize = 63;

/// A valid project name: 1–63 lowercase letters, digits and `-`, starting and
/// ending with a letter or digit. Holding one proves it was checked.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProjectName(String);

/// Why a string is not a valid name (also used for tags, which follow the same rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {MAX_NAME_CHARS} characters, found {0}")]
    TooLong(usize),
    #[error("must contain only lowercase letters, digits and '-', found \"{0}\"")]
    BadCharacter(String),
    #[error("must start and end with a lowercase letter or digit, found \"{0}\"")]
    BadEdge(String),
}

impl ProjectName {
    /// Checks `value` against the name rule.
    pub fn parse(value: &str) -> Result<ProjectName, NameError> {
        check_name(value)?;
        Ok(ProjectName(value.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The name rule itself, shared by names and tags.
pub(crate) fn check_name(value: &str) -> Result<(), NameError> {
    let is_alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if value.is_empty() {
        return Err(NameError::Empty);
    }
    let chars = value.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(NameError::TooLong(chars));
    }
    if !value.chars().all(|c| is_alnum(c) || c == '-') {
        return Err(NameError::BadCharacter(value.to_owned()));
    }
    if !value.starts_with(is_alnum) || !value.ends_with(is_alnum) {
        return Err(NameError::BadEdge(value.to_owned()));
    }
    Ok(())
}

impl fmt::Display for ProjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ProjectName {
    type Err = NameError;

    fn from_str(value: &str) -> Result<ProjectName, NameError> {
        ProjectName::parse(value)
    }
}

impl TryFrom<String> for ProjectName {
    type Error = NameError;

    fn try_from(value: String) -> Result<ProjectName, NameError> {
        check_name(&value)?;
        Ok(ProjectName(value))
    }
}

impl From<ProjectName> for String {
    fn from(name: ProjectName) -> String {
        name.0
    }
}

impl AsRef<str> for ProjectName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_should_accept_lowercase_letters_digits_and_inner_dashes() {
        for name in ["a", "9", "checkout-api", "a-1-b", &"x".repeat(63)] {
            assert_eq!(ProjectName::parse(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn parse_should_explain_each_broken_rule() {
        let cases = [
            ("", "must not be empty"),
            (&"x".repeat(64), "must be at most 63 characters, found 64"),
            (
                "Checkout_API",
                "must contain only lowercase letters, digits and '-', found \"Checkout_API\"",
            ),
            (
                "é",
                "must contain only lowercase letters, digits and '-', found \"é\"",
            ),
            (
                "-api",
                "must start and end with a lowercase letter or digit, found \"-api\"",
            ),
            (
                "api-",
                "must start and end with a lowercase letter or digit, found \"api-\"",
            ),
        ];
        for (name, message) in cases {
            assert_eq!(ProjectName::parse(name).unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn json_should_refuse_an_invalid_name() {
        let name: ProjectName = serde_json::from_str("\"checkout-api\"").unwrap();
        assert_eq!(name.to_string(), "checkout-api");
        assert_eq!(serde_json::to_string(&name).unwrap(), "\"checkout-api\"");
        assert!(serde_json::from_str::<ProjectName>("\"Bad Name\"").is_err());
    }
}
