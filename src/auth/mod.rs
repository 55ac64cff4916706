//! OAuth 2.1 authorization for HTTP servers (MCP 2025-11-25 "Authorization").
//!
//! When a server answers `401` (or `403 insufficient_scope`), the HTTP
//! transport hands the challenge to an [`OAuthClient`], which, on the
//! caller's thread and with blocking `ureq` calls:
//!
//! 1. discovers the Protected Resource Metadata (RFC 9728: the challenge's
//!    `resource_metadata`, else the well-known paths in the spec's order),
//!    then the Authorization Server Metadata (RFC 8414 and OpenID Connect
//!    discovery, in the spec's order), falling back to the 2025-03-26 rules
//!    (metadata at the server's origin, then default endpoints);
//! 2. picks a client identity: pre-registered credentials, else a Client ID
//!    Metadata Document URL when the server supports them, else Dynamic
//!    Client Registration (RFC 7591);
//! 3. runs the authorization-code flow with PKCE S256 and a checked
//!    `state`, with the `resource` parameter (RFC 8707) and the scope from
//!    the challenge, else `scopes_supported`, else none — or, for machine
//!    clients, the client-credentials grant, or, for enterprise-managed
//!    clients, cross-app access ([`Grant::CrossAppAccess`]: the user's ID
//!    token exchanged at the identity provider for an ID-JAG, presented as a
//!    JWT bearer grant), or, for workloads, their platform-issued JWT
//!    presented as a JWT bearer grant ([`Grant::WorkloadIdentity`]);
//! 4. keeps the tokens in a [`TokenStore`], refreshes them when they expire,
//!    and steps the scope up on `403 insufficient_scope`, a bounded number
//!    of times;
//! 5. with [`OAuthOptions::dpop`], binds the tokens to a key of its own
//!    (DPoP, RFC 9449): a fresh signed proof on every token request and
//!    every MCP request, server nonces honoured.
//!
//! Before any code, verifier, secret or refresh token leaves, the servers
//! are checked: the metadata's `issuer` (RFC 8414 §3.3), the authorization
//! response's `iss` (RFC 9207), https off loopback, and the binding of
//! stored credentials to the issuer that made them ([`AuthRefusal`]).
//!
//! The person in the loop is an [`AuthorizationHandler`]: it opens the
//! authorization URL and returns the URL the browser was redirected to.
//! [`HeadlessAuthorizer`] follows the URL programmatically, for tests and
//! servers that approve without a person. Tokens and secrets never reach a
//! log line or a `Debug` output.

mod authorizers;
mod challenge;
mod discovery;
mod dpop;
mod flow;
mod pkce;
mod registration;
mod tokens;
mod url;
mod validate;

use std::fmt;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::Value;
use ureq::Agent;

pub use crate::error::AuthRefusal;
pub use authorizers::{AuthorizationHandler, HeadlessAuthorizer, LoopbackAuthorizer};
pub use challenge::{parse_bearer, parse_dpop, BearerChallenge};
pub use discovery::{
    authorization_server_metadata_urls, protected_resource_metadata_urls, AuthServerMetadata,
    ResourceMetadata,
};
use registration::{basic_auth, client_assertion};
pub use tokens::{
    ClientRegistration, MemoryTokenStore, OAuthTokens, StoredAuth, TokenEndpointAuth, TokenStore,
};

use crate::error::{McpError, Result};
use crate::json::strings;
use crate::limits::{
    AUTH_HTTP_TIMEOUT, AUTH_MAX_BODY, AUTH_MAX_STEP_UPS, AUTH_TOKEN_EXPIRY_MARGIN,
};

/// Which grant obtains the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Authorization code with PKCE: a person authorizes.
    AuthorizationCode,
    /// Client credentials: a machine client with a pre-registered secret.
    ClientCredentials,
    /// Cross-app access (Enterprise-Managed Authorization, SEP-990): the
    /// user's identity-provider ID token is exchanged at the IdP for an
    /// identity assertion grant (ID-JAG, RFC 8693 token exchange), which the
    /// MCP server's authorization server takes as a JWT bearer grant
    /// (RFC 7523). No browser. Needs [`OAuthOptions::identity`] and a
    /// client pre-registered with the authorization server.
    CrossAppAccess,
    /// Workload identity federation (SEP-1933): a JWT the platform issued
    /// to this workload (a Kubernetes service-account token, a cloud
    /// instance identity token, a CI job's OIDC token) is presented as an
    /// RFC 7523 JWT bearer grant, with no browser and no stored secret.
    /// Needs [`OAuthOptions::workload_assertion`]; the client id, if the
    /// authorization server wants one, is [`OAuthOptions::client_id`]. A
    /// refused assertion is reported, never retried with another grant.
    WorkloadIdentity,
}

/// The user's enterprise identity, for [`Grant::CrossAppAccess`].
#[derive(Clone)]
pub struct IdentityAssertion {
    /// The identity provider's token endpoint (where the exchange happens).
    pub idp_token_endpoint: String,
    /// The user's ID token from the identity provider (a JWT).
    pub id_token: String,
    /// This client's id at the identity provider.
    pub idp_client_id: Option<String>,
    /// This client's secret at the identity provider (HTTP Basic), if any.
    pub idp_client_secret: Option<String>,
}

impl fmt::Debug for IdentityAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityAssertion")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("id_token", &"<redacted>")
            .field("idp_client_id", &self.idp_client_id)
            .field(
                "idp_client_secret",
                &self.idp_client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// RFC 8693 and SEP-990 names used by [`Grant::CrossAppAccess`].
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// How a client authorizes with OAuth.
#[derive(Clone)]
pub struct OAuthOptions {
    /// Pre-registered client id (preferred when set).
    pub client_id: Option<String>,
    /// Pre-registered client secret.
    pub client_secret: Option<String>,
    /// The issuer of the authorization server the pre-registered
    /// credentials belong to. When set, they are only ever sent to that
    /// server: a resource naming another one is refused with
    /// [`AuthRefusal::CredentialsForAnotherIssuer`] (MCP 2026-07-28,
    /// "Authorization Server Binding"). `None`: used with whichever server
    /// the resource names.
    pub client_issuer: Option<String>,
    /// A pre-registered client's EC P-256 private key (PKCS#8 PEM): the
    /// client then authenticates with an ES256 JWT assertion
    /// (`private_key_jwt`) instead of a secret.
    pub client_assertion_key: Option<String>,
    /// An HTTPS URL of this client's metadata document, used as the client
    /// id when the server supports Client ID Metadata Documents.
    pub client_metadata_url: Option<String>,
    /// The name given in dynamic registration.
    pub client_name: String,
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
    /// A scope to request instead of the discovered one.
    pub scope: Option<String>,
    /// The grant.
    pub grant: Grant,
    /// Opens the authorization URL.
    pub authorizer: Arc<dyn AuthorizationHandler>,
    /// Keeps the tokens.
    pub token_store: Arc<dyn TokenStore>,
    /// How many `403 insufficient_scope` step-ups one connection attempts.
    pub max_step_ups: u32,
    /// The user's identity-provider token, for [`Grant::CrossAppAccess`].
    pub identity: Option<IdentityAssertion>,
    /// The workload's JWT, for [`Grant::WorkloadIdentity`]: its `aud`
    /// must be the authorization server's issuer. Such tokens are short
    /// lived; give each new connection a fresh one.
    pub workload_assertion: Option<String>,
    /// DPoP (RFC 9449): request tokens bound to a key this client holds,
    /// and present them with the `DPoP` scheme and a fresh proof on every
    /// request, so a leaked token cannot be replayed by whoever finds it.
    /// Server nonces are honoured. An authorization server that advertises
    /// DPoP algorithms without ES256 is refused. Off by default.
    pub dpop: bool,
    /// The DPoP key (an EC P-256 PKCS#8 PEM document), so tokens kept in
    /// the store stay usable after a restart; implies [`dpop`](Self::dpop).
    /// Without it each [`OAuthClient`] draws a key of its own.
    pub dpop_key: Option<String>,
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("client_issuer", &self.client_issuer)
            .field(
                "client_assertion_key",
                &self.client_assertion_key.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .field("scope", &self.scope)
            .field("grant", &self.grant)
            .field("identity", &self.identity)
            .field(
                "workload_assertion",
                &self.workload_assertion.as_ref().map(|_| "<redacted>"),
            )
            .field("dpop", &self.dpop)
            .field("dpop_key", &self.dpop_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            client_id: None,
            client_secret: None,
            client_issuer: None,
            client_assertion_key: None,
            client_metadata_url: None,
            client_name: crate::limits::CLIENT_NAME.to_owned(),
            redirect_uri: "http://127.0.0.1:33418/callback".to_owned(),
            scope: None,
            grant: Grant::AuthorizationCode,
            authorizer: Arc::new(HeadlessAuthorizer::default()),
            token_store: Arc::new(MemoryTokenStore::default()),
            max_step_ups: AUTH_MAX_STEP_UPS,
            identity: None,
            workload_assertion: None,
            dpop: false,
            dpop_key: None,
        }
    }
}

fn auth_agent(max_redirects: u32) -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(max_redirects)
        .timeout_global(Some(AUTH_HTTP_TIMEOUT))
        .build()
        .new_agent()
}

/// Unions two space-separated scope lists, keeping order.
fn union_scopes(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for s in a.into_iter().chain(b).flat_map(str::split_whitespace) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    (!out.is_empty()).then(|| out.join(" "))
}

#[derive(Default)]
struct State {
    stored: Option<StoredAuth>,
    step_ups: u32,
    /// The current token is DPoP-bound: sent as `DPoP`, with a proof.
    bound: bool,
    /// The resource's last DPoP nonce (RFC 9449 §9).
    rs_nonce: Option<String>,
    /// The authorization server's last DPoP nonce (RFC 9449 §8).
    as_nonce: Option<String>,
}

impl State {
    /// The `Authorization` value of the stored token.
    fn header(&self) -> Option<String> {
        let scheme = if self.bound { "DPoP" } else { "Bearer" };
        self.stored
            .as_ref()
            .map(|s| format!("{scheme} {}", s.tokens.access_token))
    }
}

/// The OAuth state of one HTTP connection.
pub struct OAuthClient {
    server: String,
    server_url: String,
    opts: OAuthOptions,
    agent: Agent,
    state: Mutex<State>,
    /// Serializes authorization runs: concurrent 401s share one flow.
    flow: Mutex<()>,
    /// The DPoP key when [`OAuthOptions::dpop`] is on (or why there is
    /// none: a bad PEM is reported at the first token request).
    dpop: Option<std::result::Result<dpop::DpopKey, String>>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server", &self.server)
            .field("server_url", &self.server_url)
            .field("authorized", &self.state.lock().stored.is_some())
            .finish()
    }
}

enum Fetched {
    Json(Value),
    Missing,
}

impl OAuthClient {
    /// The OAuth state for server `server` at `server_url`; tokens are
    /// loaded from the options' store.
    pub fn new(server: &str, server_url: &str, opts: OAuthOptions) -> OAuthClient {
        let stored = opts.token_store.load(server);
        let dpop = match (&opts.dpop_key, opts.dpop) {
            (Some(pem), _) => Some(dpop::DpopKey::from_pem(pem)),
            (None, true) => Some(dpop::DpopKey::generate()),
            (None, false) => None,
        };
        // A stored token of a DPoP client is taken to be bound; if the
        // server issued a Bearer one, the first 401 re-authorizes and the
        // answer's token_type settles it.
        let bound = dpop.is_some() && stored.is_some();
        OAuthClient {
            server: server.to_owned(),
            server_url: server_url.to_owned(),
            opts,
            agent: auth_agent(0),
            state: Mutex::new(State {
                stored,
                bound,
                ..State::default()
            }),
            flow: Mutex::new(()),
            dpop,
        }
    }

    fn err(&self, message: impl Into<String>) -> McpError {
        McpError::Auth {
            server: self.server.clone(),
            message: message.into(),
        }
    }

    fn refused(&self, refusal: AuthRefusal) -> McpError {
        ::log::warn!(target: "mcp_client", "[{}] OAuth refused: {refusal}", self.server);
        McpError::AuthRefused {
            server: self.server.clone(),
            refusal: Box::new(refusal),
        }
    }

    /// The `Authorization` header value to send (`Bearer …`, or `DPoP …`
    /// for a DPoP-bound token), refreshing an expired token first when a
    /// refresh token is available.
    pub fn authorization(&self) -> Option<String> {
        let stored = self.state.lock().stored.clone()?;
        let expired = stored
            .tokens
            .expires_at
            .is_some_and(|t| t <= SystemTime::now() + AUTH_TOKEN_EXPIRY_MARGIN);
        if expired && stored.tokens.refresh_token.is_some() {
            // The refresh stores the new token; a failed one keeps the old.
            let _ = self.refresh(&stored);
        }
        self.current()
    }

    /// The `Authorization` value of the current token, without refreshing.
    pub fn current(&self) -> Option<String> {
        self.state.lock().header()
    }

    /// The authorization headers of a request `method` `url`: the
    /// `Authorization` value of [`authorization`](Self::authorization),
    /// and, for a DPoP-bound token, a fresh `DPoP` proof for this very
    /// request (with the resource's nonce, when it gave one).
    pub fn request_headers(&self, method: &str, url: &str) -> Vec<(&'static str, String)> {
        let Some(auth) = self.authorization() else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(2);
        if let (Some(token), Some(Ok(key))) = (auth.strip_prefix("DPoP "), &self.dpop) {
            let nonce = self.state.lock().rs_nonce.clone();
            match key.proof(method, url, nonce.as_deref(), Some(token)) {
                Ok(p) => out.push((dpop::HEADER, p)),
                // Sent without a proof the request is refused, and the
                // refusal reported; a log line says why.
                Err(e) => {
                    ::log::warn!(target: "mcp_client", "[{}] no DPoP proof: {e}", self.server)
                }
            }
        }
        out.push(("Authorization", auth));
        out
    }

    /// Records a `DPoP-Nonce` the MCP server sent (RFC 9449 §9): the next
    /// proofs carry it.
    pub fn note_dpop_nonce(&self, nonce: Option<&str>) {
        if let (Some(n), Some(_)) = (nonce.filter(|n| !n.is_empty()), &self.dpop) {
            self.state.lock().rs_nonce = Some(n.to_owned());
        }
    }

    /// The DPoP key, or why there is none; `None` when DPoP is off.
    fn dpop_key(&self) -> Result<Option<&dpop::DpopKey>> {
        match &self.dpop {
            None => Ok(None),
            Some(Ok(k)) => Ok(Some(k)),
            Some(Err(e)) => Err(self.err(e.clone())),
        }
    }

    /// The current tokens, if any.
    pub fn tokens(&self) -> Option<OAuthTokens> {
        self.state.lock().stored.as_ref().map(|s| s.tokens.clone())
    }

    /// Handles a `401` or `403` answer: refreshes, or runs the whole flow.
    /// `Ok` means the request should be retried with the new token.
    /// `sent` is the `Authorization` value the failed request carried.
    pub fn handle_challenge(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        sent: Option<&str>,
    ) -> Result<()> {
        let _serial = self.flow.lock();
        // Another thread may have re-authorized while this one waited.
        let current = self.state.lock().header();
        if current.is_some() && current.as_deref() != sent && status == 401 {
            return Ok(());
        }
        let dpop_challenge = www_authenticate.and_then(parse_dpop);
        // RFC 9449 §9: the resource wants a (new) nonce in the proof, which
        // note_dpop_nonce recorded from this answer: retry, the token is
        // fine. The transport bounds how often.
        if dpop_challenge.as_ref().and_then(|c| c.error.as_deref()) == Some(dpop::USE_NONCE)
            && self.dpop.is_some()
            && self.state.lock().rs_nonce.is_some()
        {
            return Ok(());
        }
        let challenge = www_authenticate
            .and_then(parse_bearer)
            .or(dpop_challenge)
            .unwrap_or_default();
        let step_up = status == 403 || challenge.error.as_deref() == Some("insufficient_scope");
        if step_up {
            if challenge.error.as_deref() != Some("insufficient_scope") {
                return Err(self.err(format!(
                    "the server answered {status} without insufficient_scope"
                )));
            }
            let mut st = self.state.lock();
            st.step_ups += 1;
            if st.step_ups > self.opts.max_step_ups {
                return Err(self.err(format!(
                    "still insufficient_scope after {} step-up(s); giving up",
                    self.opts.max_step_ups
                )));
            }
        } else {
            // Bind first: a guard in an `if let` scrutinee would be held
            // across the refresh, which locks the state again.
            let stored = self.state.lock().stored.clone();
            if let Some(stored) = stored {
                if stored.tokens.refresh_token.is_some() && self.refresh(&stored).is_ok() {
                    return Ok(());
                }
            }
        }
        let previous = self
            .state
            .lock()
            .stored
            .as_ref()
            .and_then(|s| s.tokens.scope.clone());
        self.authorize(&challenge, step_up.then_some(previous).flatten())
    }

    /// The JSON body of a 2xx answer to a POST; anything else is an error
    /// naming the exchange: "`<failed>` failed: …" when it could not be sent,
    /// "`<body>`: …" for an unreadable body, "`<answered>` HTTP `<status>`: …"
    /// (with the server's error) for another status.
    fn json_answer(
        &self,
        sent: std::result::Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        failed: &str,
        body: &str,
        answered: &str,
    ) -> Result<Value> {
        let resp = sent.map_err(|e| self.err(format!("{failed} failed: {e}")))?;
        let status = resp.status().as_u16();
        let v = read_json(resp.into_body()).map_err(|m| self.err(format!("{body}: {m}")))?;
        if !(200..300).contains(&status) {
            return Err(self.err(format!("{answered} HTTP {status}: {}", error_of(&v))));
        }
        Ok(v)
    }
}

fn read_json(body: ureq::Body) -> std::result::Result<Value, String> {
    let mut buf = Vec::new();
    body.into_reader()
        .take(AUTH_MAX_BODY as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("reading the body failed: {e}"))?;
    if buf.len() > AUTH_MAX_BODY {
        return Err(format!("the body exceeds {AUTH_MAX_BODY} bytes"));
    }
    serde_json::from_slice(&buf).map_err(|e| format!("not JSON: {e}"))
}

fn error_of(v: &Value) -> String {
    let e = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    match v.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{e}: {d}"),
        None => e.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_order() {
        assert_eq!(
            protected_resource_metadata_urls("https://h.example/public/mcp"),
            [
                "https://h.example/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls("https://h.example"),
            ["https://h.example/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example/tenant1"),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example/"),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn scopes_union() {
        assert_eq!(
            union_scopes(Some("a b"), Some("b c")).as_deref(),
            Some("a b c")
        );
        assert_eq!(union_scopes(None, None), None);
    }

    #[test]
    fn client_assertions_verify() {
        use p256::ecdsa::signature::Verifier;
        use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
        use p256::pkcs8::{EncodePrivateKey, LineEnding};
        let key = SigningKey::from_bytes(&[7u8; 32].into()).unwrap();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let jwt = client_assertion(&pem, "client-1", "https://auth.example").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let d = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .unwrap()
        };
        let claims: Value = serde_json::from_slice(&d(parts[1])).unwrap();
        assert_eq!(claims["iss"], "client-1");
        assert_eq!(claims["sub"], "client-1");
        assert_eq!(claims["aud"], "https://auth.example");
        let sig = Signature::from_slice(&d(parts[2])).unwrap();
        VerifyingKey::from(&key)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .expect("the signature verifies");
        assert!(client_assertion("not a key", "c", "a").is_err());
    }

    #[test]
    fn debug_redacts() {
        let t = OAuthTokens {
            access_token: "AT-SECRET".into(),
            refresh_token: Some("RT-SECRET".into()),
            expires_at: None,
            scope: None,
        };
        let c = ClientRegistration {
            client_id: "id".into(),
            client_secret: Some("CS-SECRET".into()),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
        };
        let d = format!("{t:?} {c:?}");
        assert!(!d.contains("SECRET"), "{d}");
    }
}
