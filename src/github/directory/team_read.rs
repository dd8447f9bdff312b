//! Teams read on their own, by GraphQL node id (up to 100 in one
//! request): when deliveries about a team coalesced (their order is not
//! known) or its payload lacked what the directory keeps. The payload is
//! already written; the read only puts right what a late delivery got
//! wrong, so it waits, like whole reads, while the budget is kept for the
//! sync, and backs off when it fails.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Deserialize;

use super::{read_backoff, DirectoryError, DirectoryReader, CLAIM_LEASE, TEAMS_PER_READ};
use crate::directory::change::has_nul;
use crate::directory::db::{TeamRead, TeamToRead};
use crate::directory::Team;
use crate::github::graphql::rate_limit;
use crate::source::InstallationId;

/// Teams by node id, as they are now.
pub const READ_TEAM: &str = concat!(
    "query DirectoryTeam($ids: [ID!]!) {\n",
    rate_limit!(),
    r#"  nodes(ids: $ids) {
    ... on Team {
      databaseId
      slug
      name
      privacy
      parentTeam {
        databaseId
      }
      organization {
        databaseId
      }
    }
  }
}"#
);

#[derive(Deserialize)]
struct Data {
    #[serde(default)]
    nodes: Vec<Option<TeamNode>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamNode {
    database_id: Option<i64>,
    slug: Option<String>,
    name: Option<String>,
    privacy: Option<String>,
    parent_team: Option<Id>,
    organization: Option<Id>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Id {
    database_id: Option<i64>,
}

impl DirectoryReader {
    /// Reads the teams claimed now, one request per installation; how many.
    pub(super) async fn read_teams_alone(&self) -> Result<usize, sqlx::Error> {
        let claimed = self
            .db()
            .claim::<TeamToRead>(TEAMS_PER_READ, CLAIM_LEASE)
            .await?;
        let mut by_installation: BTreeMap<InstallationId, Vec<TeamToRead>> = BTreeMap::new();
        for read in &claimed {
            match (read.installation_id, &read.node_id) {
                (Some(installation), Some(_)) => {
                    by_installation
                        .entry(installation)
                        .or_default()
                        .push(read.clone());
                }
                // Nothing to ask for it by: its organisation's teams are read whole.
                _ => self.db().repair_team_read(read).await?,
            }
        }
        for (installation, reads) in by_installation {
            self.read_group(installation, &reads).await?;
        }
        Ok(claimed.len())
    }

    async fn read_group(
        &self,
        installation: InstallationId,
        reads: &[TeamToRead],
    ) -> Result<(), sqlx::Error> {
        let started = self.db().read_started().await?;
        match self.fetch(installation, reads).await {
            Ok(found) => {
                for (read, team) in reads.iter().zip(found) {
                    self.db().finish_team_read(read, &team, started).await?;
                }
            }
            Err(DirectoryError::Held { until }) => {
                let wait = until.duration_since(SystemTime::now()).unwrap_or_default();
                for read in reads {
                    self.db().put_off_team_read(read, wait, false).await?;
                }
            }
            Err(error) => {
                for read in reads {
                    let failures = u32::try_from(read.failures).unwrap_or(0) + 1;
                    let wait = read_backoff().delay(failures);
                    tracing::warn!(org = read.org_id, team = read.team_id, %error, failures,
                        retry_s = wait.as_secs(), "could not read a team");
                    self.db().put_off_team_read(read, wait, true).await?;
                }
            }
        }
        Ok(())
    }

    /// The teams as GitHub has them now, in the order of `reads` (`None`:
    /// GitHub no longer has it).
    async fn fetch(
        &self,
        installation: InstallationId,
        reads: &[TeamToRead],
    ) -> Result<Vec<TeamRead>, DirectoryError> {
        self.take_share(installation)?;
        let ids: Vec<&str> = reads.iter().filter_map(|r| r.node_id.as_deref()).collect();
        let variables = serde_json::json!({ "ids": ids });
        let (data, errors) = self
            .client
            .graphql_partial::<Data>(installation, READ_TEAM, variables)
            .await?;
        if let Some(error) = errors
            .iter()
            .find(|e| e.kind.as_deref() != Some("NOT_FOUND"))
        {
            return Err(DirectoryError::Answer {
                login: format!("installation {installation}"),
                message: error.message.clone(),
            });
        }
        let mut nodes = data.nodes.into_iter();
        Ok(reads
            .iter()
            .map(|read| team_of(read, nodes.next().flatten()))
            .collect())
    }
}

/// What a node answers for `read`: gone when GitHub has no such team
/// (any more) in that organisation. A node that names no privacy is kept
/// secret; one whose name PostgreSQL cannot store is skipped.
fn team_of(read: &TeamToRead, node: Option<TeamNode>) -> TeamRead {
    let Some(node) = node else {
        return TeamRead::Gone;
    };
    let same_org = node.organization.and_then(|o| o.database_id) == Some(read.org_id);
    let (Some(slug), Some(name)) = (node.slug, node.name) else {
        return TeamRead::Gone;
    };
    if node.database_id != Some(read.team_id) || !same_org {
        return TeamRead::Gone;
    }
    if has_nul(&slug) || has_nul(&name) {
        tracing::warn!(
            org = read.org_id,
            team = read.team_id,
            "a team's name holds a NUL, which cannot be stored: skipped"
        );
        return TeamRead::Skipped;
    }
    TeamRead::Found(Team {
        id: read.team_id,
        slug,
        name,
        parent_id: node.parent_team.and_then(|p| p.database_id),
        secret: !node
            .privacy
            .is_some_and(|p| p.eq_ignore_ascii_case("VISIBLE")),
    })
}
