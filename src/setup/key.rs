//! `ROSTER_SECRET_KEY`: the 32-byte key that seals the App stored by setup
//! and signs the setup `state`. Read from the setting, or kept in a file
//! under the data folder (created on first use, readable by its owner only).

use std::io::Write;
use std::path::{Path, PathBuf};

use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::OsRng;

/// Name of the key file under `ROSTER_DATA_DIR`.
pub const KEY_FILE: &str = "secret.key";

/// The key, never printed.
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(…)")
    }
}

/// Why a key could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("must be 64 hexadecimal characters (32 bytes; `openssl rand -hex 32`)")]
    Malformed,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} must hold 64 hexadecimal characters")]
    BadFile { path: PathBuf },
    #[error("cannot create {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SecretKey {
    /// Parses 64 hex characters.
    pub fn from_hex(text: &str) -> Result<Self, KeyError> {
        let bytes = hex::decode(text.trim()).map_err(|_| KeyError::Malformed)?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| KeyError::Malformed)?;
        Ok(Self(bytes))
    }

    /// A new random key from the operating system.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        Self(bytes)
    }

    /// The key as 64 hex characters (what the key file holds).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key kept in `data_dir`'s key file, made (mode 0600) when absent.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, KeyError> {
        let path = data_dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => return Self::from_hex(&text).map_err(|_| KeyError::BadFile { path }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(KeyError::Read { path, source }),
        }
        let key = Self::generate();
        match create_private(data_dir, &path, &key.to_hex()) {
            Ok(()) => Ok(key),
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                Self::load_or_create(data_dir)
            }
            Err(source) => Err(KeyError::Write { path, source }),
        }
    }
}

/// Writes `line` to `path` under `data_dir` (made when absent), readable by
/// its owner only, and only if no file is there yet: a process that finds
/// `AlreadyExists` reads the one another process made first.
pub(crate) fn create_private(data_dir: &Path, path: &Path, line: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    file.sync_all()
}

/// `n` random bytes as hex: setup tokens and state nonces.
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_should_be_made_once_readable_by_its_owner_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = SecretKey::load_or_create(dir.path()).expect("made");
        let again = SecretKey::load_or_create(dir.path()).expect("read");
        assert_eq!(first.to_hex(), again.to_hex());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .expect("key file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_damaged_key_file_should_be_refused_not_replaced() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(KEY_FILE), "not hex").expect("write");
        let error = SecretKey::load_or_create(dir.path()).expect_err("refused");
        assert!(error.to_string().contains("64 hexadecimal"), "{error}");
        let text = std::fs::read_to_string(dir.path().join(KEY_FILE)).expect("kept");
        assert_eq!(text, "not hex");
    }

    #[test]
    fn only_64_hex_characters_should_make_a_key() {
        assert!(SecretKey::from_hex(&"ab".repeat(32)).is_ok());
        assert!(SecretKey::from_hex("abcd").is_err());
        assert!(SecretKey::from_hex(&"zz".repeat(32)).is_err());
    }
}
