//! One page of an organisation's teams or members, 100 at a time, as
//! GitHub's GraphQL answers it: the queries, the answer's shapes, what a
//! refusal (`members: read` missing) looks like, and the names skipped
//! because PostgreSQL cannot store them.

use serde::Deserialize;

use super::DirectoryError;
use crate::directory::change::has_nul;
use crate::directory::db::Account;
use crate::directory::{Member, Team};
use crate::github::client::Client;
use crate::github::graphql::{rate_limit, PageInfo};
use crate::github::http::CallError;
use crate::source::InstallationId;

/// A query for one page of an organisation's `connection`, 100 nodes a
/// page, each node with `fields`: teams and members are read alike.
macro_rules! organization_page {
    ($name:literal, $connection:literal, $fields:literal) => {
        concat!(
            "query ",
            $name,
            "($login: String!, $after: String) {\n",
            rate_limit!(),
            "  organization(login: $login) {
    databaseId
    ",
            $connection,
            "(first: 100, after: $after) {
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
",
            $fields,
            "      }
    }
  }
}"
        )
    };
}

/// An organisation's teams, 100 a page.
pub const READ_TEAMS: &str = organization_page!(
    "DirectoryTeams",
    "teams",
    "        databaseId
        slug
        name
        privacy
        parentTeam {
          databaseId
        }
"
);

/// An organisation's members, 100 a page.
pub const READ_MEMBERS: &str = organization_page!(
    "DirectoryMembers",
    "membersWithRole",
    "        databaseId
        login
"
);

/// One page of teams: the teams, the ids of those skipped because
/// PostgreSQL cannot store their name (it holds a NUL; they are kept as
/// the directory has them), and the cursor of the next page, if any.
pub(super) struct TeamsPage {
    pub teams: Vec<Team>,
    pub skipped: Vec<i64>,
    pub next: Option<String>,
}

pub(super) async fn teams(
    client: &Client,
    installation: InstallationId,
    account: &Account,
    after: Option<String>,
) -> Result<TeamsPage, Refused> {
    let page: Page<TeamNode> = page(client, installation, account, READ_TEAMS, after).await?;
    let mut teams = Vec::new();
    let mut skipped = Vec::new();
    for t in page.nodes.into_iter().flatten() {
        let Some(id) = t.database_id else {
            continue;
        };
        if has_nul(&t.slug) || has_nul(&t.name) {
            tracing::warn!(account = %account.login, team = id, slug = %t.slug.escape_debug(),
                "a team's name holds a NUL, which cannot be stored: skipped");
            skipped.push(id);
            continue;
        }
        teams.push(Team {
            id,
            slug: t.slug,
            name: t.name,
            parent_id: t.parent_team.and_then(|p| p.database_id),
            secret: t.privacy.eq_ignore_ascii_case("SECRET"),
        });
    }
    Ok(TeamsPage {
        teams,
        skipped,
        next: next(account, page.page_info)?,
    })
}

/// One page of members and the cursor of the next, if there is one.
pub(super) async fn members(
    client: &Client,
    installation: InstallationId,
    account: &Account,
    after: Option<String>,
) -> Result<(Vec<Member>, Option<String>), Refused> {
    let page: Page<MemberNode> = page(client, installation, account, READ_MEMBERS, after).await?;
    let members = page
        .nodes
        .into_iter()
        .flatten()
        .filter_map(|m| {
            if has_nul(&m.login) {
                tracing::warn!(account = %account.login, member = ?m.database_id,
                    login = %m.login.escape_debug(),
                    "a member's login holds a NUL, which cannot be stored: skipped");
                return None;
            }
            Some(Member {
                id: m.database_id?,
                login: m.login,
            })
        })
        .collect();
    Ok((members, next(account, page.page_info)?))
}

#[derive(Deserialize)]
struct Data<T> {
    organization: Option<Org<T>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Org<T> {
    database_id: Option<i64>,
    #[serde(alias = "membersWithRole")]
    teams: Option<Page<T>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    page_info: PageInfo,
    #[serde(default = "Vec::new")]
    nodes: Vec<Option<T>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamNode {
    database_id: Option<i64>,
    slug: String,
    name: String,
    privacy: String,
    parent_team: Option<Parent>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Parent {
    database_id: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MemberNode {
    database_id: Option<i64>,
    login: String,
}

/// One page of `query`; the organisation must still be the one Roster
/// keeps by id.
async fn page<T: serde::de::DeserializeOwned>(
    client: &Client,
    installation: InstallationId,
    account: &Account,
    query: &str,
    after: Option<String>,
) -> Result<Page<T>, Refused> {
    let variables = serde_json::json!({ "login": account.login, "after": after });
    let answer = client
        .graphql_partial::<Data<T>>(installation, query, variables)
        .await;
    let (data, errors) = match answer {
        Ok(answer) => answer,
        Err(CallError::Status {
            status: 403,
            message,
            ..
        }) => return Err(Refused::Forbidden(message)),
        Err(error) => return Err(Refused::Other(error.into())),
    };
    if let Some(forbidden) = errors
        .iter()
        .find(|e| e.kind.as_deref() == Some("FORBIDDEN"))
    {
        return Err(Refused::Forbidden(forbidden.message.clone()));
    }
    let answer_error = |message: String| {
        Refused::Other(DirectoryError::Answer {
            login: account.login.clone(),
            message,
        })
    };
    if let Some(error) = errors.first() {
        return Err(answer_error(error.message.clone()));
    }
    let Some(org) = data.organization else {
        return Err(answer_error("no such organisation".to_owned()));
    };
    if org.database_id.is_some_and(|id| id != account.org_id) {
        return Err(answer_error(format!(
            "the login now names another organisation than {}",
            account.org_id
        )));
    }
    org.teams
        .ok_or_else(|| answer_error("no page in the answer".to_owned()))
}

/// Why a read stopped: GitHub refused it, or anything else.
pub(super) enum Refused {
    Forbidden(String),
    Other(DirectoryError),
}

impl From<DirectoryError> for Refused {
    fn from(error: DirectoryError) -> Self {
        Refused::Other(error)
    }
}

fn next(account: &Account, page: PageInfo) -> Result<Option<String>, Refused> {
    match (page.has_next_page, page.end_cursor) {
        (true, Some(cursor)) => Ok(Some(cursor)),
        (true, None) => Err(Refused::Other(DirectoryError::Answer {
            login: account.login.clone(),
            message: "more pages follow but no cursor was given".to_owned(),
        })),
        (false, _) => Ok(None),
    }
}
