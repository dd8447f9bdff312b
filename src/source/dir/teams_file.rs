//! `teams.yaml`: the local folder's teams and members, so the example
//! organisation shows owners working without GitHub.
//!
//! ```yaml
//! teams:
//!   - slug: payments
//!     name: Payments
//!     members: [alice, bob]
//! ```
//!
//! The local folder has no ids: a team's id is a stable hash of its slug
//! and a member's of its login, so the same file gives the same directory
//! on every start. Problems are reported as `teams.yaml:LINE:COLUMN: …`.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::directory::{Member, Team, TeamsFile};
use crate::project::tree::{self, Kind, NodeId, Tree};
use crate::project::MAX_FILE_BYTES;

/// The file's name, at the root of the local folder.
pub const TEAMS_FILE: &str = "teams.yaml";

/// The largest `teams.yaml` read (a project file's bound); a larger one is
/// refused whole.
pub const MAX_TEAMS_FILE_BYTES: usize = MAX_FILE_BYTES;

/// Why `teams.yaml` could not be used; the directory is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TeamsFileError {
    #[error("{TEAMS_FILE}: larger than {MAX_TEAMS_FILE_BYTES} bytes")]
    TooLarge,
    #[error("{TEAMS_FILE}: not UTF-8 text")]
    NotText,
    #[error("{TEAMS_FILE}:{line}:{column}: {message}")]
    At {
        line: usize,
        column: usize,
        message: String,
    },
}

/// Reads `bytes` as a `teams.yaml`.
pub fn parse(bytes: &[u8]) -> Result<TeamsFile, TeamsFileError> {
    if bytes.len() > MAX_TEAMS_FILE_BYTES {
        return Err(TeamsFileError::TooLarge);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| TeamsFileError::NotText)?;
    let tree = tree::load(text).map_err(|e| TeamsFileError::At {
        line: e.pos.line,
        column: e.pos.column,
        message: e.message,
    })?;
    let Some(root) = tree.root else {
        return Ok(TeamsFile::default());
    };
    let walk = Walk { tree: &tree };
    let mut teams_node = None;
    for &(key, value) in walk.map(root, "the file")? {
        match walk.scalar(key, "a key")? {
            "teams" => teams_node = Some(value),
            other => return Err(walk.at(key, format!("unknown field {other:?} (only teams)"))),
        }
    }
    let Some(teams_node) = teams_node else {
        return Ok(TeamsFile::default());
    };
    let mut teams = Vec::new();
    let mut slugs: BTreeMap<String, usize> = BTreeMap::new();
    let mut members: BTreeMap<String, String> = BTreeMap::new();
    let items = match &tree.get(teams_node).kind {
        Kind::Scalar { plain: true, text } if text.is_empty() || text == "~" || text == "null" => {
            Vec::new()
        }
        _ => walk.seq(teams_node, "teams")?.to_vec(),
    };
    for (i, item) in items.into_iter().enumerate() {
        let index = i + 1;
        let (mut slug, mut name, mut logins) = (None, None, Vec::new());
        for &(key, value) in walk.map(item, &format!("teams[{index}]"))? {
            match walk.scalar(key, "a key")? {
                "slug" => slug = Some((value, walk.scalar(value, "slug")?.trim().to_owned())),
                "name" => name = Some(walk.scalar(value, "name")?.to_owned()),
                "members" => {
                    for login in walk.seq(value, "members")? {
                        let text = walk.scalar(*login, "a member")?;
                        logins.push((*login, text.trim().trim_start_matches('@').to_owned()));
                    }
                }
                other => {
                    return Err(walk.at(
                        key,
                        format!("teams[{index}]: unknown field {other:?} (slug, name, members)"),
                    ))
                }
            }
        }
        let Some((slug_node, slug)) = slug else {
            return Err(walk.at(item, format!("teams[{index}]: slug is required")));
        };
        if !is_name(&slug) {
            return Err(walk.at(
                slug_node,
                format!("teams[{index}].slug: {slug:?} must be letters, digits, '-' or '_'"),
            ));
        }
        if let Some(first) = slugs.insert(slug.to_lowercase(), index) {
            return Err(walk.at(
                slug_node,
                format!("teams[{index}].slug: {slug:?} is also teams[{first}]'s"),
            ));
        }
        for (node, login) in logins {
            if !is_name(&login) {
                return Err(walk.at(
                    node,
                    format!(
                        "teams[{index}].members: {login:?} must be letters, digits, '-' or '_'"
                    ),
                ));
            }
            members.entry(login.to_lowercase()).or_insert(login);
        }
        teams.push(Team {
            id: local_id("team", &slug),
            name: name.unwrap_or_else(|| slug.clone()),
            slug,
            parent_id: None,
            secret: false,
        });
    }
    let members = members
        .into_values()
        .map(|login| Member {
            id: local_id("member", &login),
            login,
        })
        .collect();
    Ok(TeamsFile { teams, members })
}

/// Reads the tree, with errors that point at a node.
struct Walk<'a> {
    tree: &'a Tree,
}

impl<'a> Walk<'a> {
    fn at(&self, node: NodeId, message: String) -> TeamsFileError {
        let pos = self.tree.get(node).pos;
        TeamsFileError::At {
            line: pos.line,
            column: pos.column,
            message,
        }
    }

    fn map(&self, node: NodeId, what: &str) -> Result<&'a [(NodeId, NodeId)], TeamsFileError> {
        match &self.tree.get(node).kind {
            Kind::Map(pairs) => Ok(pairs),
            _ => Err(self.at(node, format!("{what} must be a mapping"))),
        }
    }

    fn seq(&self, node: NodeId, what: &str) -> Result<&'a [NodeId], TeamsFileError> {
        match &self.tree.get(node).kind {
            Kind::Seq(items) => Ok(items),
            _ => Err(self.at(node, format!("{what} must be a list"))),
        }
    }

    fn scalar(&self, node: NodeId, what: &str) -> Result<&'a str, TeamsFileError> {
        match &self.tree.get(node).kind {
            Kind::Scalar { text, .. } => Ok(text),
            _ => Err(self.at(node, format!("{what} must be text"))),
        }
    }
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 100
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A stable, positive id for a local team or member, below 2^53 like local
/// repository ids (a JSON reader's double holds it exactly).
fn local_id(kind: &str, name: &str) -> i64 {
    let digest = Sha256::digest(format!("{kind}/{}", name.to_lowercase()).as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::try_from(u64::from_be_bytes(first) >> 11).unwrap_or(0) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_teams_file_should_give_teams_and_their_members_once() {
        let parsed = parse(
            b"teams:\n  - slug: payments\n    name: Payments\n    members: [alice, Bob]\n  - slug: platform\n    members: ['@bob']\n",
        )
        .expect("valid");
        let slugs: Vec<&str> = parsed.teams.iter().map(|t| t.slug.as_str()).collect();
        assert_eq!(slugs, ["payments", "platform"]);
        assert_eq!(parsed.teams[1].name, "platform");
        let logins: Vec<&str> = parsed.members.iter().map(|m| m.login.as_str()).collect();
        assert_eq!(logins, ["alice", "Bob"]);
        let again = parse(b"teams: [{slug: Payments}]").expect("valid");
        assert_eq!(parsed.teams[0].id, again.teams[0].id);
        assert!(parsed.teams.iter().all(|t| t.id > 0 && t.id <= 1 << 53));
    }

    #[test]
    fn an_empty_file_should_be_an_empty_directory() {
        assert_eq!(parse(b"").unwrap(), TeamsFile::default());
        assert_eq!(parse(b"teams: []\n").unwrap(), TeamsFile::default());
        assert_eq!(parse(b"teams:\n").unwrap(), TeamsFile::default());
    }

    #[test]
    fn a_malformed_file_should_say_what_and_where() {
        let cases: [(&[u8], &str); 7] = [
            (b"teams: [", "teams.yaml:1:8: this `[` is never closed"),
            (
                b"teams:\n  - name: no slug\n",
                "teams.yaml:2:5: teams[1]: slug is required",
            ),
            (
                b"teams:\n  - slug: a\n    owner: x\n",
                "teams.yaml:3:5: teams[1]: unknown field \"owner\"",
            ),
            (
                b"teams:\n  - slug: a\n  - slug: A\n",
                "teams.yaml:3:11: teams[2].slug: \"A\" is also teams[1]'s",
            ),
            (
                b"teams:\n  - slug: 'two words'\n",
                "teams.yaml:2:11: teams[1].slug: \"two words\" must be",
            ),
            (b"teams: payments\n", "teams.yaml:1:8: teams must be a list"),
            (b"- a\n", "teams.yaml:1:1: the file must be a mapping"),
        ];
        for (text, expected) in cases {
            let error = parse(text).expect_err("malformed").to_string();
            assert!(error.starts_with(expected), "{error:?} is not {expected:?}");
        }
        let large = vec![b' '; MAX_TEAMS_FILE_BYTES + 1];
        assert_eq!(parse(&large), Err(TeamsFileError::TooLarge));
        assert_eq!(parse(b"teams: \xff"), Err(TeamsFileError::NotText));
    }
}
