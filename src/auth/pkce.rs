//! PKCE (RFC 7636) with S256, and random strings for `state`.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// `n` random bytes from the operating system.
pub(crate) fn random_bytes(n: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

/// A URL-safe random string of `bytes` bytes of entropy.
pub(crate) fn random_token(bytes: usize) -> std::io::Result<String> {
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes(bytes)?))
}

/// A code verifier (43 characters from the unreserved set: 32 random bytes).
pub(crate) fn verifier() -> std::io::Result<String> {
    random_token(32)
}

/// The S256 challenge of a verifier: `BASE64URL(SHA256(verifier))`.
pub(crate) fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers() {
        let v = verifier().unwrap();
        assert_eq!(v.len(), 43);
        assert!(v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_ne!(v, verifier().unwrap());
    }
}
