//! Project files GitHub calls binary ([`FileContent::Binary`]) among a
//! repository's several files, when the GitHub source did not read their
//! bytes because the registry had judged that very blob: the judgement
//! stands. Settled in the reconcile's transaction, after the repository's
//! row was locked, before anything previews or decides the observation,
//! so the listing of an unchanged repository reads nothing and its files
//! keep the problem lines their bytes gave (a NUL at its line and column).

use sqlx::PgConnection;

use super::file_blobs;
use super::repos::RepoState;
use super::{RegistryError, Status};
use crate::source::{FileContent, FileState, Observed, RepoId};

/// `observed` with each binary file whose blob the registry judged marked
/// with the problem lines it was judged by; anything else as it is. One
/// statement, and only when such a file was observed.
pub(super) async fn settle(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    mut observed: Observed,
) -> Result<Observed, RegistryError> {
    let Observed::Present {
        file: FileState::Files { files, .. },
        ..
    } = &mut observed
    else {
        return Ok(observed);
    };
    let unjudged =
        |content: &FileContent| matches!(content, FileContent::Binary { judged: None, .. });
    if old.status != Status::Invalid || !files.iter().any(|f| unjudged(&f.content)) {
        return Ok(observed);
    }
    let Some(recorded) = file_blobs::read(conn, id).await? else {
        return Ok(observed);
    };
    let error = old.error.as_deref().unwrap_or_default();
    for file in files.iter_mut() {
        let FileContent::Binary { blob, judged } = &mut file.content else {
            continue;
        };
        if judged.is_none() && recorded.get(&file.path) == Some(&*blob) {
            *judged = lines_of(error, &file.path);
        }
    }
    Ok(observed)
}

/// The problem lines of the file at `path` in a repository's `error`
/// (each names its path first); `None` when there is none. A line saying
/// a name of the file is taken is no problem of the file's own.
fn lines_of(error: &str, path: &str) -> Option<String> {
    let (prefix, taken) = (format!("{path}:"), format!("{path}: name \""));
    let lines: Vec<&str> = error
        .lines()
        .filter(|line| line.starts_with(&prefix) && !line.starts_with(&taken))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::lines_of;

    #[test]
    fn only_the_lines_of_the_path_should_be_its_judgement() {
        let error = "a/project.yaml:3:7: file: contains a NUL\n\
                     a/project.yaml.bak:1:1: other\n\
                     b/project.yaml: name \"x\" is owned by acme/y\n\
                     b/project.yaml:2:1: owner: must not be empty";
        assert_eq!(
            lines_of(error, "a/project.yaml").as_deref(),
            Some("a/project.yaml:3:7: file: contains a NUL")
        );
        assert_eq!(
            lines_of(error, "b/project.yaml").as_deref(),
            Some("b/project.yaml:2:1: owner: must not be empty")
        );
        assert_eq!(lines_of(error, "c/project.yaml"), None);
    }
}
