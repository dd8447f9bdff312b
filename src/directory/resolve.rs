//! Owner resolution: what the `owner` text of a project file names in the
//! organisation's directory (pure: no I/O).
//!
//! `payments` and `@acme/payments` name a team by its slug (the form
//! CODEOWNERS uses), `@login` a member; case does not matter. A slug the
//! team had before is `renamed`, a team that went is `deleted`, anything
//! else `unknown` with the nearest slugs. Teams are matched by id through
//! every slug they had, so a rename never loses an owner.

use std::collections::HashMap;

use super::{Directory, Unchecked};

/// How many suggestions an unknown owner gets at most.
const MAX_SUGGESTIONS: usize = 3;

/// What an owner resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// A current team of the organisation.
    Team { id: i64, slug: String },
    /// A member of the organisation (or the personal account itself).
    Member { login: String },
    /// A team by a name it had before; `to` is how to name it now, which
    /// no message tells when the team is `secret` (docs/contract.md#what-a-reader-without-credentials-sees).
    Renamed {
        id: i64,
        from: String,
        to: String,
        secret: bool,
    },
    /// A team that no longer exists.
    Deleted { id: i64, slug: String },
    /// Nobody by that name; the nearest visible slugs, nearest first.
    Unknown { suggestions: Vec<String> },
    /// Owners of this account are not checked (a personal account, or the
    /// directory could not be read).
    Unchecked,
}

impl Resolution {
    /// The `owner_status` word for it.
    pub fn status(&self) -> &'static str {
        match self {
            Resolution::Team { .. } => "team",
            Resolution::Member { .. } => "member",
            Resolution::Renamed { .. } => "renamed",
            Resolution::Deleted { .. } => "deleted",
            Resolution::Unknown { .. } => "unknown",
            Resolution::Unchecked => "unchecked",
        }
    }

    /// The team's id, when the owner names one (current, renamed or gone).
    pub fn team_id(&self) -> Option<i64> {
        match self {
            Resolution::Team { id, .. }
            | Resolution::Renamed { id, .. }
            | Resolution::Deleted { id, .. } => Some(*id),
            _ => None,
        }
    }

    /// What to tell the file's author, when there is something to fix.
    pub fn problem(&self, owner: &str, org: &str) -> Option<String> {
        match self {
            Resolution::Unknown { suggestions } if suggestions.is_empty() => {
                Some(format!("no team or member {owner:?} in {org}"))
            }
            Resolution::Unknown { suggestions } => Some(format!(
                "no team or member {owner:?} in {org} (did you mean {}?)",
                suggestions.join(", ")
            )),
            // A check or an error anyone may read never names a secret
            // team's slug now.
            Resolution::Renamed { secret: true, .. } => Some(format!(
                "{owner:?} names a team by a slug it no longer has; update the file"
            )),
            Resolution::Renamed { to, .. } => {
                Some(format!("{owner:?} was renamed to {to:?}; update the file"))
            }
            Resolution::Deleted { .. } => Some(format!("team {owner:?} was deleted in {org}")),
            _ => None,
        }
    }
}

/// A directory indexed for resolving many owners.
#[derive(Debug)]
pub struct Resolver<'a> {
    directory: &'a Directory,
    /// Lower-case slug (current or former) → index into `directory.teams`.
    by_slug: HashMap<String, usize>,
    members: HashMap<String, &'a str>,
}

impl<'a> Resolver<'a> {
    pub fn new(directory: &'a Directory) -> Self {
        let by_id: HashMap<i64, usize> = directory
            .teams
            .iter()
            .enumerate()
            .map(|(i, t)| (t.team.id, i))
            .collect();
        let mut by_slug: HashMap<String, usize> = directory
            .slugs
            .iter()
            .filter_map(|(slug, id)| by_id.get(id).map(|i| (slug.to_lowercase(), *i)))
            .collect();
        // A current slug always wins over a slug another team had before.
        for (i, known) in directory.teams.iter().enumerate() {
            let slug = known.team.slug.to_lowercase();
            let keep_other = by_slug
                .get(&slug)
                .is_some_and(|&j| j != i && !directory.teams[j].deleted && known.deleted);
            if !keep_other {
                by_slug.insert(slug, i);
            }
        }
        let members = directory
            .members
            .iter()
            .map(|m| (m.login.to_lowercase(), m.login.as_str()))
            .collect();
        Self {
            directory,
            by_slug,
            members,
        }
    }

    /// What `owner` names.
    pub fn resolve(&self, owner: &str) -> Resolution {
        let owner = owner.trim();
        let dir = self.directory;
        match &dir.unchecked {
            Some(Unchecked::Off(_)) => return Resolution::Unchecked,
            Some(Unchecked::Personal) => {
                let own = owner
                    .strip_prefix('@')
                    .is_some_and(|l| l.eq_ignore_ascii_case(&dir.login));
                return if own {
                    Resolution::Member {
                        login: dir.login.clone(),
                    }
                } else {
                    Resolution::Unchecked
                };
            }
            None => {}
        }
        let Some(handle) = owner.strip_prefix('@') else {
            return self.team(owner, None);
        };
        match handle.split_once('/') {
            Some((org, slug)) if org.eq_ignore_ascii_case(&dir.login) => self.team(slug, None),
            Some((org, slug)) if dir.former_logins.contains(&org.to_lowercase()) => {
                self.team(slug, Some(owner))
            }
            Some((_, slug)) => Resolution::Unknown {
                suggestions: self.nearest(slug),
            },
            None => match self.members.get(&handle.to_lowercase()) {
                Some(login) => Resolution::Member {
                    login: (*login).to_owned(),
                },
                None => Resolution::Unknown {
                    suggestions: self.nearest(handle),
                },
            },
        }
    }

    /// A team by `slug`; `old_org` is the owner as written when it named
    /// the organisation by a login it had before.
    fn team(&self, slug: &str, old_org: Option<&str>) -> Resolution {
        let lower = slug.to_lowercase();
        let Some(&i) = self.by_slug.get(&lower) else {
            return Resolution::Unknown {
                suggestions: self.nearest(slug),
            };
        };
        let known = &self.directory.teams[i];
        let team = &known.team;
        if known.deleted {
            return Resolution::Deleted {
                id: team.id,
                slug: team.slug.clone(),
            };
        }
        let renamed = !team.slug.eq_ignore_ascii_case(slug);
        match old_org {
            Some(written) => Resolution::Renamed {
                id: team.id,
                from: written.to_owned(),
                to: format!("@{}/{}", self.directory.login, team.slug),
                secret: team.secret,
            },
            None if renamed => Resolution::Renamed {
                id: team.id,
                from: slug.to_owned(),
                to: team.slug.clone(),
                secret: team.secret,
            },
            None => Resolution::Team {
                id: team.id,
                slug: team.slug.clone(),
            },
        }
    }

    /// The current, visible slugs nearest to `text` by edit distance.
    fn nearest(&self, text: &str) -> Vec<String> {
        let visible = self
            .directory
            .teams
            .iter()
            .filter(|t| !t.deleted && !t.team.secret)
            .map(|t| t.team.slug.as_str());
        nearest(text, visible)
    }
}

/// The words of `known` nearest to `text` by edit distance (case aside),
/// nearest first, at most [`MAX_SUGGESTIONS`]: the "did you mean …?" of an
/// unknown owner, and of a dependency on a project no one has. A word is
/// near when a third of `text`'s letters (one to three) must change.
pub fn nearest<'k>(text: &str, known: impl IntoIterator<Item = &'k str>) -> Vec<String> {
    let text = text.to_lowercase();
    let length = text.chars().count();
    let bound = (length / 3).clamp(1, 3);
    let mut near: Vec<(usize, &str)> = known
        .into_iter()
        // Words whose lengths differ by more than the bound are never near
        // enough: skipped before the costly comparison.
        .filter(|word| word.chars().count().abs_diff(length) <= bound)
        .map(|word| (strsim::levenshtein(&text, &word.to_lowercase()), word))
        .filter(|(d, _)| *d <= bound)
        .collect();
    near.sort();
    near.dedup();
    near.into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, s)| s.to_owned())
        .collect()
}

/// What `owner` names in `directory` (indexes it once; use [`Resolver`]
/// for many owners).
pub fn resolve(directory: &Directory, owner: &str) -> Resolution {
    Resolver::new(directory).resolve(owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::directory::{KnownTeam, Member, Team};

    fn team(id: i64, slug: &str, secret: bool, deleted: bool) -> KnownTeam {
        KnownTeam {
            team: Team {
                id,
                slug: slug.to_owned(),
                name: slug.to_owned(),
                parent_id: None,
                secret,
            },
            deleted,
        }
    }

    fn acme() -> Directory {
        Directory {
            org_id: 1,
            login: "acme".to_owned(),
            former_logins: vec!["acme-old".to_owned()],
            teams: vec![
                team(10, "payments-core", false, false),
                team(11, "platform", false, false),
                team(12, "security", true, false),
                team(13, "legacy", false, true),
                team(14, "paymentz", false, false),
            ],
            slugs: vec![
                ("payments".to_owned(), 10),
                ("payments-core".to_owned(), 10),
                ("platform".to_owned(), 11),
                ("security".to_owned(), 12),
                ("sec-old".to_owned(), 12),
                ("legacy".to_owned(), 13),
                ("paymentz".to_owned(), 14),
            ],
            members: vec![Member {
                id: 100,
                login: "Octocat".to_owned(),
            }],
            unchecked: None,
        }
    }

    #[test]
    fn a_slug_in_every_form_and_case_should_name_the_team() {
        let dir = acme();
        for owner in [
            "platform",
            "PLATFORM",
            "@acme/platform",
            "@ACME/Platform",
            " platform ",
        ] {
            assert_eq!(
                resolve(&dir, owner),
                Resolution::Team {
                    id: 11,
                    slug: "platform".to_owned()
                },
                "{owner}"
            );
        }
    }

    #[test]
    fn an_at_login_should_name_a_member_and_a_bare_login_should_not() {
        let dir = acme();
        assert_eq!(
            resolve(&dir, "@octocat"),
            Resolution::Member {
                login: "Octocat".to_owned()
            }
        );
        assert_eq!(resolve(&dir, "octocat").status(), "unknown");
    }

    #[test]
    fn an_old_slug_should_be_renamed_to_the_current_one() {
        let got = resolve(&acme(), "Payments");
        assert_eq!(
            got,
            Resolution::Renamed {
                id: 10,
                from: "Payments".to_owned(),
                to: "payments-core".to_owned(),
                secret: false,
            }
        );
        assert_eq!(got.team_id(), Some(10));
        assert_eq!(
            got.problem("Payments", "acme").as_deref(),
            Some("\"Payments\" was renamed to \"payments-core\"; update the file")
        );
    }

    #[test]
    fn a_secret_teams_slug_now_should_never_be_in_the_message() {
        let got = resolve(&acme(), "sec-old");
        assert_eq!(got.status(), "renamed");
        let message = got.problem("sec-old", "acme").unwrap_or_default();
        assert_eq!(
            message,
            "\"sec-old\" names a team by a slug it no longer has; update the file"
        );
        let message = resolve(&acme(), "@acme-old/security")
            .problem("@acme-old/security", "acme")
            .unwrap_or_default();
        assert!(!message.contains("@acme/security"), "{message}");
    }

    #[test]
    fn an_old_organisation_login_should_resolve_and_be_reported_as_renamed() {
        assert_eq!(
            resolve(&acme(), "@acme-old/platform"),
            Resolution::Renamed {
                id: 11,
                from: "@acme-old/platform".to_owned(),
                to: "@acme/platform".to_owned(),
                secret: false,
            }
        );
    }

    #[test]
    fn a_deleted_team_should_be_deleted_not_unknown() {
        let got = resolve(&acme(), "@acme/legacy");
        assert_eq!(
            got,
            Resolution::Deleted {
                id: 13,
                slug: "legacy".to_owned()
            }
        );
        assert!(got.problem("legacy", "acme").is_some());
    }

    #[test]
    fn an_unknown_owner_should_suggest_the_nearest_visible_slugs() {
        let got = resolve(&acme(), "paymentss");
        assert_eq!(
            got,
            Resolution::Unknown {
                suggestions: vec!["paymentz".to_owned()]
            }
        );
        assert_eq!(
            got.problem("paymentss", "acme").as_deref(),
            Some("no team or member \"paymentss\" in acme (did you mean paymentz?)")
        );
        // A secret team is never suggested, a deleted one neither.
        assert_eq!(
            resolve(&acme(), "securty"),
            Resolution::Unknown {
                suggestions: vec![]
            }
        );
        assert_eq!(
            resolve(&acme(), "legacyy"),
            Resolution::Unknown {
                suggestions: vec![]
            }
        );
        // But a secret team itself resolves.
        assert_eq!(resolve(&acme(), "security").status(), "team");
    }

    #[test]
    fn a_team_of_another_organisation_should_be_unknown() {
        assert_eq!(
            resolve(&acme(), "@globex/platform"),
            Resolution::Unknown {
                suggestions: vec!["platform".to_owned()]
            }
        );
    }

    #[test]
    fn a_current_slug_should_win_over_a_slug_another_team_had() {
        let mut dir = acme();
        // `payments` was team 10's slug; a new team 15 took it.
        dir.teams.push(team(15, "payments", false, false));
        dir.slugs.push(("payments".to_owned(), 15));
        assert_eq!(
            resolve(&dir, "payments"),
            Resolution::Team {
                id: 15,
                slug: "payments".to_owned()
            }
        );
    }

    #[test]
    fn a_personal_account_should_only_resolve_itself() {
        let dir = Directory {
            login: "someone".to_owned(),
            unchecked: Some(Unchecked::Personal),
            ..Directory::default()
        };
        assert_eq!(resolve(&dir, "@Someone").status(), "member");
        assert_eq!(resolve(&dir, "payments"), Resolution::Unchecked);
        assert_eq!(resolve(&dir, "@other"), Resolution::Unchecked);
    }

    #[test]
    fn a_directory_turned_off_should_leave_owners_unchecked() {
        let dir = Directory {
            unchecked: Some(Unchecked::Off("403".to_owned())),
            ..acme()
        };
        assert_eq!(resolve(&dir, "nobody"), Resolution::Unchecked);
        assert_eq!(Resolution::Unchecked.problem("nobody", "acme"), None);
    }
}
