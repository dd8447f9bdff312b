//! The API token of a local trial: a `dir:` source started without
//! `ROSTER_API_TOKEN` gets one of its own, kept in `ROSTER_DATA_DIR`, and
//! the log prints a link that signs the browser in with it (as notebook
//! servers do), so a newcomer sees every owner and can resync with nothing
//! to set. A GitHub deployment never gets one: there, an unset token keeps
//! writes off.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

/// The file under the data folder that keeps the trial's token.
pub const TOKEN_FILE: &str = "api-token";

/// Why the trial's token could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum TrialTokenError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no token: delete it and start again, or set ROSTER_API_TOKEN")]
    Empty { path: PathBuf },
}

/// The token kept under `data_dir`, made (32 random bytes, hex, readable by
/// its owner only) when there is none yet.
pub fn load_or_create(data_dir: &Path) -> Result<SecretString, TrialTokenError> {
    let path = data_dir.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let token = text.trim();
            if token.is_empty() {
                return Err(TrialTokenError::Empty { path });
            }
            return Ok(SecretString::from(token.to_owned()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(TrialTokenError::Read { path, source }),
    }
    let token = crate::setup::random_hex(32);
    match crate::setup::create_private(data_dir, &path, &token) {
        Ok(()) => Ok(SecretString::from(token)),
        // Another process made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => load_or_create(data_dir),
        Err(source) => Err(TrialTokenError::Write { path, source }),
    }
}

/// The link that signs a browser in with `token` on a server reached at
/// `base` (`http://127.0.0.1:8080`).
pub fn sign_in_link(base: &str, token: &SecretString) -> String {
    format!(
        "{}/signin?token={}",
        base.trim_end_matches('/'),
        token.expose_secret()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_should_be_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("made");
        assert_eq!(first.expose_secret().len(), 64);
        assert!(first.expose_secret().chars().all(|c| c.is_ascii_hexdigit()));
        let again = load_or_create(dir.path()).expect("read");
        assert_eq!(first.expose_secret(), again.expose_secret());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .expect("file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "readable by its owner only");
        }
    }

    #[test]
    fn an_empty_token_file_should_say_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(TOKEN_FILE), "\n").expect("write");
        let error = load_or_create(dir.path()).expect_err("empty");
        assert!(
            error.to_string().contains("set ROSTER_API_TOKEN"),
            "{error}"
        );
    }

    #[test]
    fn the_link_should_name_the_sign_in_page() {
        let token = SecretString::from("abc".to_owned());
        assert_eq!(
            sign_in_link("http://127.0.0.1:8080/", &token),
            "http://127.0.0.1:8080/signin?token=abc"
        );
    }
}
