//! Checks an App JWT the way GitHub does: RS256 signed with the App's key,
//! `iss` the App's id, not expired, at most ten minutes long.

use octocrab::jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Claims {
    iss: serde_json::Value,
    iat: u64,
    exp: u64,
}

/// `Ok` when `token` is a valid JWT of App `app_id`; else GitHub's message.
pub fn verify(token: &str, key: &DecodingKey, app_id: u64) -> Result<(), String> {
    let mut validation = Validation::new(Algorithm::RS256);
    // `iss` is checked below: GitHub takes it as a number, which the
    // library's own issuer check does not.
    validation.set_required_spec_claims(&["exp"]);
    let claims = decode::<Claims>(token, key, &validation)
        .map_err(|e| format!("A JSON web token could not be decoded ({e})"))?
        .claims;
    let issuer_matches = match &claims.iss {
        serde_json::Value::Number(n) => n.as_u64() == Some(app_id),
        serde_json::Value::String(s) => s == &app_id.to_string(),
        _ => false,
    };
    if !issuer_matches {
        return Err(format!(
            "'Issuer' claim ('iss') must be an Integer: {}",
            claims.iss
        ));
    }
    if claims.exp.saturating_sub(claims.iat) > 660 {
        return Err("'Expiration time' claim ('exp') is too far in the future".into());
    }
    Ok(())
}
