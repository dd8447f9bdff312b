//! Feeds arbitrary secrets, `X-Hub-Signature-256` values and bodies to the
//! signature check.
//!
//! Input layout: `secret \n header \n body` (split at the first two line
//! feeds; a missing part is empty). Besides "does not panic", it checks that
//! the check accepts exactly the header `sign` computes (hex in either case)
//! and refuses everything else.

#![no_main]

use libfuzzer_sys::fuzz_target;
use roster::intake::signature::{sign, verify, SignatureError};
use secrecy::SecretString;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&byte| byte == b'\n');
    let secret = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let header = parts.next().unwrap_or_default();
    let body = parts.next().unwrap_or_default();
    let key = SecretString::from(secret.clone());

    let expected = sign(&secret, body);
    assert_eq!(verify(&key, Some(expected.as_bytes()), body), Ok(()));
    assert_eq!(
        verify(
            &key,
            Some(
                expected
                    .to_ascii_uppercase()
                    .replacen("SHA256=", "sha256=", 1)
                    .as_bytes()
            ),
            body
        ),
        Ok(())
    );
    assert_eq!(verify(&key, None, body), Err(SignatureError::Missing));

    let accepted = verify(&key, Some(header), body).is_ok();
    let matches = header.len() == expected.len()
        && header.starts_with(b"sha256=")
        && header[7..].eq_ignore_ascii_case(&expected.as_bytes()[7..]);
    assert_eq!(accepted, matches, "header {header:?} for body {body:?}");
});
