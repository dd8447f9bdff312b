//! The project files a pull request touches, read at its head in one
//! GraphQL query: `fJ: file(path: $pJ) { mode object { … } }` for each
//! path inside `object(oid: $oid) { ... on Commit }`. Asked through the
//! commit's `file(path:)` rather than `object(expression: "<sha>:<path>")`
//! because only the tree entry carries the mode that tells a symbolic
//! link from a regular file; each answer is judged as the single-file read
//! judges its own ([`super::head_file`]).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{head_file, no_repository, ChecksApi, Entry};
use crate::github::http::CallError;
use crate::project::verdict::HeadFile;
use crate::source::InstallationId;

/// The blob's fields, as the single-file query asks them.
const ENTRY: &str = "mode object { ... on Blob { byteSize isBinary isTruncated text } }";

/// The query reading `paths` files at one commit: `$owner`, `$name`,
/// `$oid` and `$pJ` for the J-th path, answered as `fJ`.
pub fn files_at_head_query(paths: usize) -> String {
    let mut header = String::from("$owner: String!, $name: String!, $oid: GitObjectID!");
    let mut files = String::new();
    for j in 0..paths {
        header.push_str(&format!(", $p{j}: String!"));
        files.push_str(&format!("        f{j}: file(path: $p{j}) {{ {ENTRY} }}\n"));
    }
    format!(
        "query PullRequestFiles({header}) {{
  repository(owner: $owner, name: $name) {{
    object(oid: $oid) {{
      ... on Commit {{
{files}      }}
    }}
  }}
}}
"
    )
}

impl ChecksApi {
    /// The files at `paths` of commit `sha` of `owner/name`, in the order
    /// of `paths`, from one request (none when `paths` is empty). A commit
    /// GitHub does not know makes every file [`HeadFile::CommitGone`], as
    /// reading each on its own would.
    pub async fn files_at_paths(
        &self,
        installation: InstallationId,
        owner: &str,
        name: &str,
        sha: &str,
        paths: &[String],
    ) -> Result<Vec<HeadFile>, CallError> {
        #[derive(Deserialize)]
        struct Data {
            repository: Option<Repository>,
        }
        #[derive(Deserialize)]
        struct Repository {
            object: Option<Map<String, Value>>,
        }
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut variables = Map::new();
        variables.insert("owner".into(), json!(owner));
        variables.insert("name".into(), json!(name));
        variables.insert("oid".into(), json!(sha));
        for (j, path) in paths.iter().enumerate() {
            variables.insert(format!("p{j}"), json!(path));
        }
        let query = files_at_head_query(paths.len());
        let (data, errors): (Data, _) = self
            .client
            .graphql_partial(installation, &query, Value::Object(variables))
            .await?;
        let Some(repository) = data.repository else {
            return Err(no_repository(&errors));
        };
        // GitHub answers an unknown commit with `object: null` (and an error).
        let Some(commit) = repository.object else {
            return Ok(paths.iter().map(|_| HeadFile::CommitGone).collect());
        };
        (0..paths.len())
            .map(|j| {
                let answer = commit.get(&format!("f{j}")).unwrap_or(&Value::Null);
                let entry = Option::<Entry>::deserialize(answer)
                    .map_err(|e| CallError::unexpected("the files at a commit", e))?;
                Ok(head_file(entry))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_should_ask_each_path_by_its_own_variable_and_alias() {
        let query = files_at_head_query(3);
        assert!(query.contains("$p2: String!"), "{query}");
        assert!(query.contains("f0: file(path: $p0)"), "{query}");
        assert!(query.contains("f2: file(path: $p2)"), "{query}");
        assert!(!query.contains("$p3"), "{query}");
        assert_eq!(query.matches('{').count(), query.matches('}').count());
    }
}
