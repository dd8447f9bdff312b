//! `ROSTER_RELATIONS`: how strictly a project's `depends_on` is checked
//! against the registry (docs/contract.md#relations).

use std::fmt;
use std::str::FromStr;

/// How a dependency on a name no project has is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RelationsMode {
    /// Dependencies are stored as written and never checked.
    Off,
    /// An unknown name is flagged; the entry is applied.
    #[default]
    Warn,
    /// An unknown name breaks a rule: the file is `invalid`.
    Require,
}

impl FromStr for RelationsMode {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "off" => Ok(RelationsMode::Off),
            "warn" => Ok(RelationsMode::Warn),
            "require" => Ok(RelationsMode::Require),
            other => Err(format!("must be off, warn or require, not \"{other}\"")),
        }
    }
}

impl fmt::Display for RelationsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RelationsMode::Off => "off",
            RelationsMode::Warn => "warn",
            RelationsMode::Require => "require",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_should_read_back_and_others_be_refused() {
        for mode in [
            RelationsMode::Off,
            RelationsMode::Warn,
            RelationsMode::Require,
        ] {
            assert_eq!(mode.to_string().parse::<RelationsMode>(), Ok(mode));
        }
        assert_eq!(RelationsMode::default(), RelationsMode::Warn);
        assert_eq!(
            "strict".parse::<RelationsMode>(),
            Err("must be off, warn or require, not \"strict\"".to_owned())
        );
    }
}
