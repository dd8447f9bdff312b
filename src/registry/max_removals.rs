//! `ROSTER_MAX_REMOVALS`: how many removals the deletion guard lets one
//! listing period make in an installation.

/// Bound of the deletion guard per installation and listing period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxRemovals {
    /// 10 repositories or 10 % of the installation, whichever is larger.
    #[default]
    Default,
    Count(u32),
    /// Percentage (0..=100) of the installation's repositories.
    Percent(u32),
}

impl MaxRemovals {
    /// How many removals one listing period may make in an installation
    /// with `repos_in_installation` repositories; more than this are held.
    pub fn limit(&self, repos_in_installation: usize) -> usize {
        let percent_of = |p: u32| repos_in_installation.saturating_mul(p as usize) / 100;
        match *self {
            MaxRemovals::Default => percent_of(10).max(10),
            MaxRemovals::Count(n) => n as usize,
            MaxRemovals::Percent(p) => percent_of(p),
        }
    }
}

impl std::str::FromStr for MaxRemovals {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let raw = raw.trim();
        if let Some(number) = raw.strip_suffix('%') {
            let p: u32 = number
                .trim()
                .parse()
                .map_err(|_| format!("{raw:?} is not a percentage like 15%"))?;
            if p > 100 {
                return Err(format!("{raw:?} is more than 100%"));
            }
            Ok(MaxRemovals::Percent(p))
        } else {
            raw.parse().map(MaxRemovals::Count).map_err(|_| {
                format!("{raw:?} is neither a count like 25 nor a percentage like 15%")
            })
        }
    }
}
