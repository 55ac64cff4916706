//! Discovery: the Protected Resource Metadata (RFC 9728) and the
//! Authorization Server Metadata (RFC 8414, OpenID Connect), in the
//! order the specification gives, with the 2025-03-26 fallbacks.

use super::*;

/// Authorization Server Metadata (the fields the client uses).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthServerMetadata {
    /// The issuer.
    pub issuer: Option<String>,
    /// The authorization endpoint.
    pub authorization_endpoint: String,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The dynamic registration endpoint.
    pub registration_endpoint: Option<String>,
    /// Scopes it supports.
    pub scopes_supported: Vec<String>,
    /// Token endpoint auth methods it supports (empty: not stated).
    pub token_endpoint_auth_methods_supported: Vec<String>,
    /// PKCE methods; `None` when the metadata does not say.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Grant types it supports.
    pub grant_types_supported: Vec<String>,
    /// Whether it accepts Client ID Metadata Documents.
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: whether its authorization responses carry `iss` (then a
    /// response without one is refused).
    pub authorization_response_iss_parameter_supported: bool,
    /// RFC 9449: the DPoP proof algorithms it accepts; `None` when the
    /// metadata does not say.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// True when these are the 2025-03-26 default endpoints (no metadata found).
    pub defaults: bool,
}

impl AuthServerMetadata {
    fn from_json(v: &Value) -> Option<AuthServerMetadata> {
        Some(AuthServerMetadata {
            issuer: crate::json::opt_str(v, "issuer"),
            authorization_endpoint: v.get("authorization_endpoint")?.as_str()?.to_owned(),
            token_endpoint: v.get("token_endpoint")?.as_str()?.to_owned(),
            registration_endpoint: crate::json::opt_str(v, "registration_endpoint"),
            scopes_supported: strings(v, "scopes_supported"),
            token_endpoint_auth_methods_supported: strings(
                v,
                "token_endpoint_auth_methods_supported",
            ),
            code_challenge_methods_supported: v
                .get("code_challenge_methods_supported")
                .map(|_| strings(v, "code_challenge_methods_supported")),
            grant_types_supported: strings(v, "grant_types_supported"),
            client_id_metadata_document_supported: v
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            authorization_response_iss_parameter_supported: v
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            dpop_signing_alg_values_supported: v
                .get("dpop_signing_alg_values_supported")
                .map(|_| strings(v, "dpop_signing_alg_values_supported")),
            defaults: false,
        })
    }

    /// The checks every metadata document passes before any of its
    /// endpoints is used: its `issuer` is the one its URL was built from
    /// (RFC 8414 §3.3), and its endpoints are https unless loopback.
    fn validate(&self, expected_issuer: &str, url: &str) -> std::result::Result<(), AuthRefusal> {
        validate::check_metadata_issuer(expected_issuer, self.issuer.as_deref(), url)?;
        self.check_endpoints()
    }

    fn check_endpoints(&self) -> std::result::Result<(), AuthRefusal> {
        validate::check_secure("authorization endpoint", &self.authorization_endpoint)?;
        validate::check_secure("token endpoint", &self.token_endpoint)?;
        if let Some(r) = &self.registration_endpoint {
            validate::check_secure("registration endpoint", r)?;
        }
        Ok(())
    }
}

/// The Protected Resource Metadata (the fields the client uses).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceMetadata {
    /// The resource identifier.
    pub resource: Option<String>,
    /// Its authorization servers (issuer URLs).
    pub authorization_servers: Vec<String>,
    /// Scopes it supports.
    pub scopes_supported: Vec<String>,
}

/// The URLs tried for the Protected Resource Metadata of `server_url`,
/// in the spec's order (after a `resource_metadata` from the challenge).
pub fn protected_resource_metadata_urls(server_url: &str) -> Vec<String> {
    let Some((origin, path)) = url::split(server_url) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    out
}

/// The URLs tried for the metadata of authorization server `issuer`, in the
/// spec's order (RFC 8414, then OpenID Connect Discovery in both forms).
pub fn authorization_server_metadata_urls(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = url::split(issuer) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

impl OAuthClient {
    pub(super) fn fetch_json(&self, url: &str) -> Result<Fetched> {
        let resp = self
            .agent
            .get(url)
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", crate::limits::PROTOCOL_VERSION)
            .call()
            .map_err(|e| self.err(format!("GET {url} failed: {e}")))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            ::log::debug!(target: "mcp_client", "[{}] OAuth discovery: {url} answered {status}", self.server);
            return Ok(Fetched::Missing);
        }
        let v = read_json(resp.into_body()).map_err(|m| self.err(format!("GET {url}: {m}")))?;
        Ok(Fetched::Json(v))
    }

    pub(super) fn discover_resource(
        &self,
        challenge: &BearerChallenge,
    ) -> Result<Option<ResourceMetadata>> {
        let mut urls = Vec::new();
        if let Some(u) = &challenge.resource_metadata {
            urls.push(u.clone());
        }
        urls.extend(protected_resource_metadata_urls(&self.server_url));
        for u in urls {
            if let Fetched::Json(v) = self.fetch_json(&u)? {
                let servers = strings(&v, "authorization_servers");
                if servers.is_empty() {
                    continue;
                }
                return Ok(Some(ResourceMetadata {
                    resource: crate::json::opt_str(&v, "resource"),
                    authorization_servers: servers,
                    scopes_supported: strings(&v, "scopes_supported"),
                }));
            }
        }
        Ok(None)
    }

    /// The metadata of authorization server `issuer`, validated. A
    /// document naming another issuer is refused outright rather than
    /// skipped: the next well-known URL is on the same host, and a server
    /// that serves poisoned metadata at one is not trusted at the other.
    pub(super) fn discover_auth_server(&self, issuer: &str) -> Result<Option<AuthServerMetadata>> {
        validate::check_secure("authorization server issuer", issuer)
            .map_err(|r| self.refused(r))?;
        for u in authorization_server_metadata_urls(issuer) {
            if let Fetched::Json(v) = self.fetch_json(&u)? {
                if let Some(m) = AuthServerMetadata::from_json(&v) {
                    m.validate(issuer, &u).map_err(|r| self.refused(r))?;
                    return Ok(Some(m));
                }
            }
        }
        Ok(None)
    }

    /// 2025-03-26: the server's origin is the authorization base URL; its
    /// metadata, else the default endpoints.
    pub(super) fn legacy_auth_server(&self) -> Result<AuthServerMetadata> {
        let (origin, _) = url::split(&self.server_url)
            .ok_or_else(|| self.err("the server URL is not http(s)"))?;
        let metadata_url = format!("{origin}/.well-known/oauth-authorization-server");
        if let Fetched::Json(v) = self.fetch_json(&metadata_url)? {
            if let Some(m) = AuthServerMetadata::from_json(&v) {
                validate::check_legacy_metadata_issuer(&origin, m.issuer.as_deref(), &metadata_url)
                    .and_then(|()| m.check_endpoints())
                    .map_err(|r| self.refused(r))?;
                return Ok(m);
            }
        }
        let m = AuthServerMetadata {
            issuer: Some(origin.clone()),
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            defaults: true,
            ..AuthServerMetadata::default()
        };
        m.check_endpoints().map_err(|r| self.refused(r))?;
        Ok(m)
    }
}
