//! `ROSTER_OWNERS`: how strictly a project file's `owner` is checked
//! against the organisation's directory.

use std::fmt;
use std::str::FromStr;

/// How an owner that names nobody is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OwnersMode {
    /// Any text, as before owners were checked.
    Off,
    /// An unknown owner is flagged; the entry is applied.
    #[default]
    Warn,
    /// An unknown owner breaks a rule: the file is `invalid`.
    Require,
}

impl FromStr for OwnersMode {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "off" => Ok(OwnersMode::Off),
            "warn" => Ok(OwnersMode::Warn),
            "require" => Ok(OwnersMode::Require),
            other => Err(format!("must be off, warn or require, not \"{other}\"")),
        }
    }
}

impl fmt::Display for OwnersMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OwnersMode::Off => "off",
            OwnersMode::Warn => "warn",
            OwnersMode::Require => "require",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_should_read_back_and_others_be_refused() {
        for mode in [OwnersMode::Off, OwnersMode::Warn, OwnersMode::Require] {
            assert_eq!(mode.to_string().parse::<OwnersMode>(), Ok(mode));
        }
        assert_eq!(OwnersMode::default(), OwnersMode::Warn);
        assert_eq!(
            "strict".parse::<OwnersMode>(),
            Err("must be off, warn or require, not \"strict\"".to_owned())
        );
    }
}
