//! Pagination: the bounds of a page, and opaque cursors (the last key of a
//! page, base64 of its JSON).
//!
//! Opaque so clients cannot depend on the key's shape, which may change.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::registry::RegistryError;

/// Page size when the caller gives none.
pub const DEFAULT_LIMIT: u32 = 100;
/// Largest page size; larger requests are cut to it.
pub const MAX_LIMIT: u32 = 1000;

pub(crate) fn page_size(limit: u32) -> i64 {
    i64::from(limit.clamp(1, MAX_LIMIT))
}

pub(crate) fn encode<K: Serialize>(key: &K) -> String {
    // Serializing tuples of strings and integers cannot fail.
    let json = serde_json::to_vec(key).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

pub(crate) fn decode<K: DeserializeOwned>(cursor: &str) -> Result<K, RegistryError> {
    let json = URL_SAFE_NO_PAD
        .decode(cursor.trim_end_matches('='))
        .map_err(|_| RegistryError::BadCursor)?;
    serde_json::from_slice(&json).map_err(|_| RegistryError::BadCursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_should_round_trip_its_key() {
        let key = ("acme".to_string(), "checkout".to_string(), 42_i64);
        let cursor = encode(&key);
        assert_eq!(decode::<(String, String, i64)>(&cursor).ok(), Some(key));
    }

    #[test]
    fn cursor_should_reject_what_it_did_not_make() {
        for bad in ["", "!!!", "bm90IGpzb24", &encode(&("only-one",))] {
            assert!(matches!(
                decode::<(String, String, i64)>(bad),
                Err(RegistryError::BadCursor)
            ));
        }
    }
}
