//! RS256 for the App's JSON web tokens through `ring`, which rustls
//! already brings, instead of jsonwebtoken's RustCrypto backend: that one
//! brings the `rsa` crate (RUSTSEC-2023-0071, a timing side channel with no
//! fixed release) and about 36 crates with it (docs/dependencies.md).
//!
//! octocrab signs the App's tokens with jsonwebtoken, which asks the
//! process's [`CryptoProvider`]; [`install`] makes it this one. It must run
//! before the first token is signed or checked (the configuration check,
//! [`super::auth::Auth::new`] and the test kit's fake GitHub call it):
//! jsonwebtoken without a backend feature refuses every key otherwise.

use octocrab::jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use octocrab::jsonwebtoken::errors::{Error, ErrorKind};
use octocrab::jsonwebtoken::signature::{self, Signer, Verifier};
use octocrab::jsonwebtoken::{
    Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey,
};
use ring::rand::SystemRandom;
use ring::signature::{
    RsaKeyPair, RsaPublicKeyComponents, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256,
    RSA_PKCS1_SHA256,
};

/// RS256 only: the one algorithm GitHub takes for an App's token.
static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory,
    verifier_factory,
    jwk_utils: JwkUtils::new_unimplemented(),
};

/// Makes `ring` the process's JWT backend; any number of calls, from any
/// thread (the first wins, and it is always this one).
pub fn install() {
    let _ = PROVIDER.install_default();
}

struct RingSigner(RsaKeyPair);

impl Signer<Vec<u8>> for RingSigner {
    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, signature::Error> {
        let mut signature = vec![0; self.0.public().modulus_len()];
        self.0
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                message,
                &mut signature,
            )
            .map_err(|_| signature::Error::new())?;
        Ok(signature)
    }
}

impl JwtSigner for RingSigner {
    fn algorithm(&self) -> Algorithm {
        Algorithm::RS256
    }
}

enum RingVerifier {
    /// An RSAPublicKey in DER (what a PEM public key holds).
    Der(Vec<u8>),
    Components {
        n: Vec<u8>,
        e: Vec<u8>,
    },
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        let checked = match self {
            Self::Der(der) => {
                UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, der).verify(message, signature)
            }
            Self::Components { n, e } => RsaPublicKeyComponents { n, e }.verify(
                &RSA_PKCS1_2048_8192_SHA256,
                message,
                signature,
            ),
        };
        checked.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        Algorithm::RS256
    }
}

fn signer_factory(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    if *algorithm != Algorithm::RS256 || key.family() != AlgorithmFamily::Rsa {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    // A PKCS#1 key (GitHub's `BEGIN RSA PRIVATE KEY`), or PKCS#8.
    let pair = RsaKeyPair::from_der(key.inner())
        .or_else(|_| RsaKeyPair::from_pkcs8(key.inner()))
        .map_err(|e| Error::from(ErrorKind::InvalidRsaKey(e.to_string())))?;
    Ok(Box::new(RingSigner(pair)))
}

fn verifier_factory(
    algorithm: &Algorithm,
    key: &DecodingKey,
) -> Result<Box<dyn JwtVerifier>, Error> {
    if *algorithm != Algorithm::RS256 || key.family() != AlgorithmFamily::Rsa {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    Ok(Box::new(match key.kind() {
        DecodingKeyKind::SecretOrDer(der) => RingVerifier::Der(der.clone()),
        DecodingKeyKind::RsaModulusExponent { n, e } => RingVerifier::Components {
            n: n.clone(),
            e: e.clone(),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use octocrab::jsonwebtoken::{decode, encode, Header, Validation};

    /// The test kit's App key, made for the tests only, and its public half.
    const PRIVATE: &str = include_str!("../../tests/fixtures/test-app-key.pem");
    const PUBLIC: &str = include_str!("../../tests/fixtures/test-app-key.pub.pem");

    #[test]
    fn a_token_signed_with_ring_should_verify_and_an_altered_one_not() {
        install();
        let Ok(key) = EncodingKey::from_rsa_pem(PRIVATE.as_bytes()) else {
            panic!("the test key is a PEM RSA key");
        };
        let claims = serde_json::json!({ "iss": "1", "exp": 4_000_000_000u64 });
        let token = encode(&Header::new(Algorithm::RS256), &claims, &key);
        let Ok(token) = token else {
            panic!("signing failed: {token:?}");
        };
        let public = DecodingKey::from_rsa_pem(PUBLIC.as_bytes());
        let Ok(public) = public else {
            panic!("the public key: {public:?}");
        };
        let validation = Validation::new(Algorithm::RS256);
        assert!(decode::<serde_json::Value>(&token, &public, &validation).is_ok());
        let mut altered = token.clone();
        altered.pop();
        altered.push(if token.ends_with('A') { 'B' } else { 'A' });
        assert!(decode::<serde_json::Value>(&altered, &public, &validation).is_err());
    }

    #[test]
    fn a_key_that_is_not_rsa_should_be_refused_by_name() {
        install();
        let key = EncodingKey::from_secret(b"not rsa");
        let signed = encode(&Header::new(Algorithm::RS256), &serde_json::json!({}), &key);
        assert!(signed.is_err());
    }
}
