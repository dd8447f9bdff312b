//! A project file as GitHub's REST contents API answers it, and what it
//! tells: the bytes, or why they cannot be used.

use base64::Engine as _;
use serde::Deserialize;

use super::client::Client;
use super::graphql::{too_large, SYMLINK_MESSAGE};
use super::http::{join, CallError};
use super::MAX_FILE_BYTES;
use crate::source::{FileState, InstallationId};

/// The answer for a path: a file, or the listing of a directory.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Contents {
    File(FileContents),
    Directory(Vec<serde::de::IgnoredAny>),
}

/// A file's answer; `content` is missing for files over GitHub's limit.
#[derive(Debug, Deserialize)]
pub(super) struct FileContents {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    content: Option<String>,
    /// The path answered for: GitHub follows a symbolic link to a file of
    /// the repository and answers with that file, under its own path.
    #[serde(default)]
    path: Option<String>,
}

/// The file at `path` of `owner/name` at commit `sha`, over REST
/// (`GET /repos/{owner}/{name}/contents/{path}?ref=`).
pub(super) async fn contents_at(
    client: &Client,
    installation: InstallationId,
    (owner, name): (&str, &str),
    path: &str,
    sha: String,
) -> Result<FileState, CallError> {
    let mut url = join(
        &client.api_url,
        ["repos", owner, name, "contents"]
            .into_iter()
            .chain(path.split('/')),
    )?;
    url.query_pairs_mut().append_pair("ref", &sha);
    let reply = client
        .get(installation, &url, "application/vnd.github+json", true)
        .await?;
    let what = format!("GET /repos/{owner}/{name}/contents/{path}");
    match reply.status {
        200 => {}
        404 => return Ok(FileState::Absent { sha: Some(sha) }),
        status => {
            return Err(CallError::Status {
                what,
                status,
                message: reply.message(),
            })
        }
    }
    let contents: Contents =
        serde_json::from_str(&reply.body).map_err(|e| CallError::unexpected(&what, e))?;
    file_state(&what, path, sha, contents)
}

/// What the contents answer for the project file (at `path`) at commit
/// `sha` says.
pub(super) fn file_state(
    what: &str,
    path: &str,
    sha: String,
    contents: Contents,
) -> Result<FileState, CallError> {
    let file = match contents {
        Contents::Directory(entries) => {
            let message = format!(
                "the path is a directory ({} entries), not a file",
                entries.len()
            );
            return Ok(FileState::Unreadable {
                sha: Some(sha),
                message,
            });
        }
        Contents::File(file) => file,
    };
    let followed = file.path.as_deref().is_some_and(|p| p != path);
    if file.kind == "symlink" || followed {
        return Ok(FileState::Unreadable {
            sha: Some(sha),
            message: SYMLINK_MESSAGE.into(),
        });
    }
    if file.kind != "file" {
        let message = format!("the path is a {}, not a file", file.kind);
        return Ok(FileState::Unreadable {
            sha: Some(sha),
            message,
        });
    }
    if file.size > MAX_FILE_BYTES {
        return Ok(FileState::Unreadable {
            sha: Some(sha),
            message: too_large(file.size),
        });
    }
    match (file.encoding.as_deref(), file.content) {
        (Some("base64"), Some(content)) => {
            let bytes = decode_base64(&content).map_err(|e| CallError::unexpected(what, e))?;
            Ok(FileState::Found { sha, bytes })
        }
        (encoding, _) => {
            let message = format!(
                "GitHub did not return the file's content (encoding {:?})",
                encoding.unwrap_or("none")
            );
            Ok(FileState::Unreadable {
                sha: Some(sha),
                message,
            })
        }
    }
}

/// Decodes GitHub's base64, which is wrapped in newlines every 60 chars.
pub fn decode_base64(content: &str) -> Result<Vec<u8>, base64::DecodeError> {
    // Some copies of GitHub's examples carry the newlines as literal `\n`;
    // a backslash is never part of base64, so removing both is safe.
    let compact: String = content
        .replace("\\n", "")
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(compact)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_base64_should_decode() {
        let content = "bmFtZTogY2hlY2tvdXQtYXBpCm93bmVyOiB0ZWFt\nLXBheW1lbnRzCg==\n";
        assert_eq!(
            decode_base64(content).unwrap(),
            b"name: checkout-api\nowner: team-payments\n"
        );
    }

    #[test]
    fn the_published_contents_example_should_decode() {
        let text = include_str!(
            "../../tests/fixtures/github/rest/get-repos-owner-repo-contents-path.file.json"
        );
        let contents: Contents = serde_json::from_str(text).unwrap();
        let Contents::File(file) = contents else {
            panic!("not a file")
        };
        let content = file.content.unwrap();
        // The published example's text was edited by hand (it is not valid
        // UTF-8 any more), but its wrapping is GitHub's and must go.
        let bytes = decode_base64(&content).unwrap();
        assert!(bytes.starts_with(b"# Yoga"));
    }

    #[test]
    fn a_large_file_should_be_unreadable_and_name_its_size() {
        let contents = Contents::File(FileContents {
            kind: "file".into(),
            encoding: Some("base64".into()),
            size: 300_000,
            content: Some(String::new()),
            path: None,
        });
        let state = file_state("x", "project.yaml", "abc".into(), contents).unwrap();
        assert!(
            matches!(state, FileState::Unreadable { ref message, .. } if message.contains("300000"))
        );
    }

    #[test]
    fn a_file_without_content_should_be_unreadable() {
        let contents = Contents::File(FileContents {
            kind: "file".into(),
            encoding: Some("none".into()),
            size: 100,
            content: Some(String::new()),
            path: None,
        });
        assert!(matches!(
            file_state("x", "project.yaml", "abc".into(), contents),
            Ok(FileState::Unreadable { .. })
        ));
    }

    #[test]
    fn a_symbolic_link_should_be_unreadable_whether_followed_or_not() {
        let link: Contents = serde_json::from_str(
            r#"{"type": "symlink", "target": "other.yaml", "path": "project.yaml", "size": 10}"#,
        )
        .unwrap();
        let followed: Contents = serde_json::from_str(
            r#"{"type": "file", "encoding": "base64", "content": "bmFtZTogeAo=",
                "path": "config/other.yaml", "size": 8}"#,
        )
        .unwrap();
        for contents in [link, followed] {
            assert!(matches!(
                file_state("x", "project.yaml", "abc".into(), contents),
                Ok(FileState::Unreadable { ref message, .. }) if message == SYMLINK_MESSAGE
            ));
        }
    }

    #[test]
    fn a_directory_should_be_unreadable() {
        let contents: Contents = serde_json::from_str(r#"[{"type":"file","name":"a"}]"#).unwrap();
        assert!(matches!(
            file_state("x", "project.yaml", "abc".into(), contents),
            Ok(FileState::Unreadable { .. })
        ));
    }
}
