//! DPoP (RFC 9449): sender-constrained tokens. The client holds an EC
//! P-256 key; every token request and every request to the MCP server
//! carries a fresh proof, a JWT signed with it that names the HTTP method
//! and URL (and, towards the resource, the access token's hash). A token
//! stolen from a log or a proxy is useless without the key.
//!
//! Server nonces (RFC 9449 §8, §9) are remembered per side: the
//! authorization server's for token requests, the resource's for MCP
//! requests.

use base64::Engine as _;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::pkce;

/// The `DPoP` request header.
pub(super) const HEADER: &str = "DPoP";
/// The nonce response header.
pub(super) const NONCE_HEADER: &str = "dpop-nonce";
/// The error of a server that wants a (new) nonce.
pub(super) const USE_NONCE: &str = "use_dpop_nonce";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The client's proof-of-possession key.
pub(super) struct DpopKey {
    key: SigningKey,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`; never `d`).
    jwk: Value,
}

impl DpopKey {
    /// A new key from the operating system's randomness. Lives as long as
    /// the [`OAuthClient`](super::OAuthClient): tokens bound to it do not
    /// survive the process unless [`OAuthOptions::dpop_key`](super::OAuthOptions::dpop_key)
    /// names a stable one.
    pub(super) fn generate() -> Result<DpopKey, String> {
        // A random 32-byte string is a valid scalar except with negligible
        // probability (zero or at least the group order); draw again then.
        for _ in 0..8 {
            let bytes = pkce::random_bytes(32).map_err(|e| format!("no randomness: {e}"))?;
            if let Ok(key) = SigningKey::from_slice(&bytes) {
                return Ok(DpopKey::from_key(key));
            }
        }
        Err("could not draw a P-256 key".into())
    }

    /// The key of a PKCS#8 PEM document.
    pub(super) fn from_pem(pem: &str) -> Result<DpopKey, String> {
        use p256::pkcs8::DecodePrivateKey;
        SigningKey::from_pkcs8_pem(pem)
            .map(DpopKey::from_key)
            .map_err(|e| format!("the DPoP key is not a P-256 PKCS#8 key: {e}"))
    }

    fn from_key(key: SigningKey) -> DpopKey {
        let point = key.verifying_key().to_encoded_point(false);
        // An uncompressed point always has both coordinates.
        let coord = |c: Option<&p256::FieldBytes>| c.map(|b| b64(b)).unwrap_or_default();
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": coord(point.x()),
            "y": coord(point.y()),
        });
        DpopKey { key, jwk }
    }

    /// The RFC 7638 thumbprint of the public key (what a server binds the
    /// token to, as `cnf.jkt`).
    pub(super) fn thumbprint(&self) -> String {
        // The required members in lexicographic order, no whitespace.
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.jwk["x"].as_str().unwrap_or_default(),
            self.jwk["y"].as_str().unwrap_or_default()
        );
        b64(&Sha256::digest(canonical.as_bytes()))
    }

    /// A fresh proof for `method` `url` (RFC 9449 §4.2): a new `jti` each
    /// time, `htu` without query or fragment, the server's `nonce` when it
    /// gave one, and `ath` (the access token's SHA-256) towards a resource.
    pub(super) fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let jti = pkce::random_token(16).map_err(|e| format!("no randomness: {e}"))?;
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk});
        let mut claims = json!({
            "jti": jti,
            "htm": method.to_ascii_uppercase(),
            "htu": htu(url),
            "iat": now,
        });
        if let Some(n) = nonce {
            claims["nonce"] = json!(n);
        }
        if let Some(t) = access_token {
            claims["ath"] = json!(b64(&Sha256::digest(t.as_bytes())));
        }
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig: Signature = self.key.sign(input.as_bytes());
        Ok(format!("{input}.{}", b64(&sig.to_bytes())))
    }
}

/// RFC 9449 §4.2: the `htu` claim is the request URL without its query
/// and fragment.
pub(super) fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    fn decode(s: &str) -> Vec<u8> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .unwrap()
    }

    #[test]
    fn proofs_are_fresh_signed_and_bound() {
        let k = DpopKey::generate().unwrap();
        let p = k
            .proof(
                "post",
                "https://mcp.example/mcp?x=1#f",
                Some("n-1"),
                Some("AT"),
            )
            .unwrap();
        let parts: Vec<&str> = p.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "the private key leaked");
        let claims: Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(
            claims["ath"],
            b64(&Sha256::digest(b"AT")),
            "ath is the token's SHA-256"
        );
        // The signature verifies with the key in the header.
        let x = decode(header["jwk"]["x"].as_str().unwrap());
        let y = decode(header["jwk"]["y"].as_str().unwrap());
        let mut sec1 = vec![4u8];
        sec1.extend(x);
        sec1.extend(y);
        let vk = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let sig = Signature::from_slice(&decode(parts[2])).unwrap();
        vk.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .expect("the proof verifies");
        // Every proof has its own jti; no nonce or ath unless given.
        let q = k
            .proof("GET", "https://mcp.example/mcp", None, None)
            .unwrap();
        let qc: Value = serde_json::from_slice(&decode(q.split('.').nth(1).unwrap())).unwrap();
        assert_ne!(qc["jti"], claims["jti"]);
        assert!(qc.get("nonce").is_none() && qc.get("ath").is_none());
    }

    #[test]
    fn thumbprint_is_rfc_7638() {
        // RFC 7638 hashes the members crv, kty, x, y in that order.
        let k = DpopKey::generate().unwrap();
        let t = k.thumbprint();
        assert_eq!(decode(&t).len(), 32);
        assert_eq!(t, k.thumbprint());
        assert_ne!(t, DpopKey::generate().unwrap().thumbprint());
    }

    #[test]
    fn keys_from_pem() {
        use p256::pkcs8::{EncodePrivateKey, LineEnding};
        let key = SigningKey::from_bytes(&[9u8; 32].into()).unwrap();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let a = DpopKey::from_pem(&pem).unwrap();
        let b = DpopKey::from_pem(&pem).unwrap();
        assert_eq!(a.thumbprint(), b.thumbprint());
        assert!(DpopKey::from_pem("garbage").is_err());
    }

    #[test]
    fn htu_drops_query_and_fragment() {
        assert_eq!(htu("https://a/b?c#d"), "https://a/b");
        assert_eq!(htu("https://a/b#d"), "https://a/b");
        assert_eq!(htu("https://a/b"), "https://a/b");
    }
}
