//! The client's identity at the authorization server: pre-registered
//! credentials, a Client ID Metadata Document URL, or Dynamic Client
//! Registration (RFC 7591); and the client authentication of a token
//! request (Basic, or a `private_key_jwt` assertion).

use super::*;

/// An RFC 7523 client assertion: a JWT signed with ES256 by `pem`, with
/// `iss` = `sub` = the client id, `aud` = the authorization server, and a
/// five-minute lifetime.
pub(super) fn client_assertion(
    pem: &str,
    client_id: &str,
    audience: &str,
) -> std::result::Result<String, String> {
    use p256::ecdsa::signature::Signer;
    use p256::ecdsa::{Signature, SigningKey};
    use p256::pkcs8::DecodePrivateKey;
    let key = SigningKey::from_pkcs8_pem(pem)
        .map_err(|e| format!("the client assertion key is not a P-256 PKCS#8 key: {e}"))?;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let jti = pkce::random_token(16).map_err(|e| format!("no randomness: {e}"))?;
    let header = serde_json::json!({"alg": "ES256", "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id, "sub": client_id, "aud": audience,
        "iat": now, "exp": now + 300, "jti": jti,
    });
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let sig: Signature = key.sign(input.as_bytes());
    Ok(format!("{input}.{}", b64(&sig.to_bytes())))
}

/// `client_secret_basic` (RFC 6749 §2.3.1: both parts form-encoded first).
pub(super) fn basic_auth(client_id: &str, secret: &str) -> String {
    let creds = format!("{}:{}", url::encode(client_id), url::encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(creds)
    )
}

impl OAuthClient {
    pub(super) fn client_identity(&self, meta: &AuthServerMetadata) -> Result<ClientRegistration> {
        let pick_auth = |has_secret: bool| {
            if !has_secret {
                return TokenEndpointAuth::None;
            }
            let supported = &meta.token_endpoint_auth_methods_supported;
            if supported.is_empty() || supported.iter().any(|m| m == "client_secret_basic") {
                TokenEndpointAuth::ClientSecretBasic
            } else if supported.iter().any(|m| m == "client_secret_post") {
                TokenEndpointAuth::ClientSecretPost
            } else {
                TokenEndpointAuth::ClientSecretBasic
            }
        };
        if let (Some(bound), Some(_)) = (&self.opts.client_issuer, &self.opts.client_id) {
            let current = meta.issuer.as_deref().unwrap_or_default();
            if bound != current {
                return Err(self.refused(AuthRefusal::CredentialsForAnotherIssuer {
                    bound: bound.clone(),
                    current: current.to_owned(),
                }));
            }
        }
        if let (Some(id), Some(_)) = (&self.opts.client_id, &self.opts.client_assertion_key) {
            return Ok(ClientRegistration {
                client_id: id.clone(),
                client_secret: None,
                auth_method: TokenEndpointAuth::PrivateKeyJwt,
            });
        }
        // RFC 7523 section 3: a JWT bearer grant needs no client
        // authentication; a workload without a client id sends none rather
        // than registering one.
        if self.opts.grant == Grant::WorkloadIdentity && self.opts.client_id.is_none() {
            return Ok(ClientRegistration {
                client_id: String::new(),
                client_secret: None,
                auth_method: TokenEndpointAuth::None,
            });
        }
        if let Some(id) = &self.opts.client_id {
            return Ok(ClientRegistration {
                client_id: id.clone(),
                client_secret: self.opts.client_secret.clone(),
                auth_method: pick_auth(self.opts.client_secret.is_some()),
            });
        }
        // A registration is only reused with the server that made it: the
        // resource may have moved to another authorization server, which
        // must never see the first one's client id or secret (SEP-2352).
        if let Some(prev) = self
            .state
            .lock()
            .stored
            .as_ref()
            .filter(|s| s.issuer.is_some() && s.issuer == meta.issuer)
            .and_then(|s| s.client.clone())
        {
            return Ok(prev);
        }
        if let Some(url) = &self.opts.client_metadata_url {
            if meta.client_id_metadata_document_supported {
                // The authorization server fetches the document from this
                // URL: over plain http to a remote host it could be
                // swapped on the path (the same rule as every endpoint).
                super::validate::check_secure("client metadata document URL", url)
                    .map_err(|r| self.refused(r))?;
                return Ok(ClientRegistration {
                    client_id: url.clone(),
                    client_secret: None,
                    auth_method: TokenEndpointAuth::None,
                });
            }
        }
        let endpoint = meta.registration_endpoint.as_ref().ok_or_else(|| {
            self.err("no client id: not pre-registered, and the server offers no registration")
        })?;
        let supported = &meta.token_endpoint_auth_methods_supported;
        let method = ["client_secret_basic", "client_secret_post", "none"]
            .into_iter()
            .find(|m| supported.iter().any(|s| s == m))
            .unwrap_or(if supported.is_empty() {
                "client_secret_basic"
            } else {
                "none"
            });
        // OpenID Connect Dynamic Registration `application_type` (asked for
        // by MCP 2026-07-28): a loopback or custom-scheme redirect is a
        // native application, an https one a web application.
        let application_type = if self.opts.redirect_uri.starts_with("https://") {
            "web"
        } else {
            "native"
        };
        let mut body = serde_json::json!({
            "client_name": self.opts.client_name,
            "application_type": application_type,
            "redirect_uris": [self.opts.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        });
        if self.dpop.is_some() {
            // RFC 9449 §5.2: this client always asks for DPoP-bound tokens.
            body["dpop_bound_access_tokens"] = Value::Bool(true);
        }
        let resp = self
            .agent
            .post(endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json")
            .send(body.to_string().as_bytes());
        let v = self.json_answer(
            resp,
            "client registration",
            "client registration",
            "client registration answered",
        )?;
        let client_id = v
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("the registration response has no client_id"))?
            .to_owned();
        let client_secret = crate::json::opt_str(&v, "client_secret");
        let auth_method = v
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .and_then(TokenEndpointAuth::parse)
            .unwrap_or_else(|| TokenEndpointAuth::parse(method).unwrap_or(TokenEndpointAuth::None));
        let auth_method = if client_secret.is_none() {
            TokenEndpointAuth::None
        } else {
            auth_method
        };
        Ok(ClientRegistration {
            client_id,
            client_secret,
            auth_method,
        })
    }
}
