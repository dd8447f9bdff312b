//! `ROSTER_CHECKS`: which check runs Roster posts.

use std::fmt;
use std::str::FromStr;

/// Which check runs are posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksMode {
    /// Pull requests and the default branch.
    #[default]
    All,
    /// Pull requests only.
    PullRequests,
    /// None: requests that arrive are dropped.
    Off,
}

impl ChecksMode {
    /// Whether pull requests get a run.
    pub fn pull_requests(self) -> bool {
        self != ChecksMode::Off
    }

    /// Whether a reconcile of the default branch posts its run.
    pub fn default_branch(self) -> bool {
        self == ChecksMode::All
    }
}

impl FromStr for ChecksMode {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "all" => Ok(ChecksMode::All),
            "pull_requests" => Ok(ChecksMode::PullRequests),
            "off" => Ok(ChecksMode::Off),
            other => Err(format!(
                "must be all, pull_requests or off, not \"{other}\""
            )),
        }
    }
}

impl fmt::Display for ChecksMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChecksMode::All => "all",
            ChecksMode::PullRequests => "pull_requests",
            ChecksMode::Off => "off",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_should_read_back_and_others_be_refused() {
        for mode in [ChecksMode::All, ChecksMode::PullRequests, ChecksMode::Off] {
            assert_eq!(mode.to_string().parse::<ChecksMode>(), Ok(mode));
        }
        assert!("some".parse::<ChecksMode>().is_err());
        assert!(ChecksMode::PullRequests.pull_requests());
        assert!(!ChecksMode::PullRequests.default_branch());
        assert!(!ChecksMode::Off.pull_requests());
    }
}
