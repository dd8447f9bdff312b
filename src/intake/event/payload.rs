//! What the event payloads share: how a body is read, the checks on
//! GitHub's ids, and `repository`, `installation` and account objects.

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::Deserialize;

use super::{PayloadRepo, WebhookEvent};
use crate::intake::envelope::Text;
use crate::source::{InstallationId, RepoId, RepoInfo};

pub(super) fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(body)
}

/// GitHub's ids are positive. A zero or negative one is not from GitHub: it
/// would register a repository that no listing ever finds, so the payload
/// is refused (400) before anything is written.
fn positive<'de, D: Deserializer<'de>>(what: &str, deserializer: D) -> Result<i64, D::Error> {
    let id = i64::deserialize(deserializer)?;
    if id > 0 {
        Ok(id)
    } else {
        Err(D::Error::custom(format_args!(
            "{what} id must be a positive integer, not {id}"
        )))
    }
}

pub(super) fn repository_id<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<RepoId, D::Error> {
    positive("repository", deserializer).map(RepoId)
}

pub(super) fn positive_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    positive("team or user", deserializer)
}

pub(super) fn installation_id<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<InstallationId, D::Error> {
    positive("installation", deserializer).map(InstallationId)
}

pub(super) fn ignored(reason: impl Into<String>) -> WebhookEvent {
    WebhookEvent::Ignored {
        reason: reason.into(),
    }
}

/// `repository` as push and repository events carry it.
#[derive(Deserialize)]
pub(super) struct Repository {
    #[serde(deserialize_with = "repository_id")]
    id: RepoId,
    node_id: Option<String>,
    pub(super) name: String,
    owner: Account,
    pub(super) default_branch: String,
    html_url: Option<String>,
    /// For the delivery log, read in the same pass (any type; a string kept).
    #[serde(default)]
    pub(super) full_name: Text,
}

impl Repository {
    pub(super) fn into_payload_repo(self, installation: Option<Installation>) -> PayloadRepo {
        PayloadRepo {
            id: self.id,
            info: RepoInfo {
                owner: self.owner.login,
                name: self.name,
                installation_id: installation.map(|i| i.id),
                default_branch: self.default_branch,
                html_url: self.html_url,
            },
            node_id: self.node_id,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct Account {
    pub(super) login: String,
}

#[derive(Deserialize)]
pub(super) struct Installation {
    #[serde(deserialize_with = "installation_id")]
    pub(super) id: InstallationId,
}
