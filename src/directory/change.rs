//! What a `team`, `membership` or `organization` webhook says about one
//! team or one member: the directory applies it as it is (no read of the
//! organisation), and reads that one team from GitHub only when the
//! payload is not enough (deliveries about it arrived together, in an
//! order nobody can tell, or the payload lacks its slug, name or privacy).

/// One team or member, as a payload describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    Team(TeamSaid),
    Member(MemberSaid),
}

/// A team, as a `team` payload describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamSaid {
    pub id: i64,
    /// GitHub's GraphQL node id: the one-team read asks for it.
    pub node_id: Option<String>,
    pub slug: Option<String>,
    pub name: Option<String>,
    /// `None` when the payload does not say: the team is then kept secret
    /// until a read says otherwise.
    pub secret: Option<bool>,
    /// `None` when the payload does not name the parent at all (the team's
    /// parent is then left as the directory has it).
    pub parent: Option<Option<i64>>,
    pub deleted: bool,
}

/// A member of the organisation, as a `membership` or `organization`
/// payload describes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSaid {
    pub id: i64,
    pub login: String,
    /// The member left the organisation.
    pub gone: bool,
}

impl TeamSaid {
    /// Whether the payload alone can be written: a live team needs its
    /// slug, name and privacy; a deleted one only its id.
    pub fn is_enough(&self) -> bool {
        self.deleted || (self.slug.is_some() && self.name.is_some() && self.secret.is_some())
    }
}

impl Said {
    /// The text of the payload PostgreSQL cannot store (it holds a NUL),
    /// if any: such a change is skipped, with a warning.
    pub fn unstorable(&self) -> Option<&str> {
        let texts: Vec<&str> = match self {
            Said::Team(team) => [&team.slug, &team.name, &team.node_id]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect(),
            Said::Member(member) => vec![member.login.as_str()],
        };
        texts.into_iter().find(|text| has_nul(text))
    }
}

/// Whether `text` holds the one character PostgreSQL cannot store.
pub fn has_nul(text: &str) -> bool {
    text.contains('\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(slug: Option<&str>, secret: Option<bool>, deleted: bool) -> TeamSaid {
        TeamSaid {
            id: 1,
            node_id: None,
            slug: slug.map(str::to_owned),
            name: slug.map(str::to_owned),
            secret,
            parent: None,
            deleted,
        }
    }

    #[test]
    fn a_payload_without_slug_or_privacy_should_not_be_enough_unless_the_team_was_deleted() {
        assert!(team(Some("payments"), Some(false), false).is_enough());
        assert!(!team(Some("payments"), None, false).is_enough());
        assert!(!team(None, Some(true), false).is_enough());
        assert!(team(None, None, true).is_enough());
    }

    #[test]
    fn a_name_with_a_nul_should_be_found_unstorable() {
        let said = Said::Team(team(Some("pay\0ments"), Some(false), false));
        assert_eq!(said.unstorable(), Some("pay\0ments"));
        let member = Said::Member(MemberSaid {
            id: 2,
            login: "alice".into(),
            gone: false,
        });
        assert_eq!(member.unstorable(), None);
    }
}
