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
//!    JWT bearer grant);
//! 4. keeps the tokens in a [`TokenStore`], refreshes them when they expire,
//!    and steps the scope up on `403 insufficient_scope`, a bounded number
//!    of times.
//!
//! The person in the loop is an [`AuthorizationHandler`]: it opens the
//! authorization URL and returns the URL the browser was redirected to.
//! [`HeadlessAuthorizer`] follows the URL programmatically, for tests and
//! servers that approve without a person. Tokens and secrets never reach a
//! log line or a `Debug` output.

mod challenge;
mod pkce;
mod url;

use std::fmt;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::Value;
use ureq::Agent;

pub use challenge::{parse_bearer, BearerChallenge};

use crate::error::{McpError, Result};
use crate::json::strings;
use crate::limits::{
    AUTH_HTTP_TIMEOUT, AUTH_MAX_BODY, AUTH_MAX_STEP_UPS, AUTH_TOKEN_EXPIRY_MARGIN,
};

/// OAuth access and refresh tokens. `Debug` shows no token.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthTokens {
    /// The access token, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// The refresh token, if the server issued one.
    pub refresh_token: Option<String>,
    /// When the access token expires, if the server said.
    pub expires_at: Option<SystemTime>,
    /// The granted scope, space-separated.
    pub scope: Option<String>,
}

impl fmt::Debug for OAuthTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthTokens")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenEndpointAuth {
    /// HTTP Basic with client id and secret.
    ClientSecretBasic,
    /// Client id and secret in the form body.
    ClientSecretPost,
    /// A public client: the client id only.
    None,
    /// A JWT assertion signed with the client's ES256 key (RFC 7523).
    PrivateKeyJwt,
}

impl TokenEndpointAuth {
    /// The registered name, e.g. `client_secret_basic`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuth::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuth::ClientSecretPost => "client_secret_post",
            TokenEndpointAuth::None => "none",
            TokenEndpointAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Parses a registered name.
    pub fn parse(s: &str) -> Option<TokenEndpointAuth> {
        Some(match s {
            "client_secret_basic" => TokenEndpointAuth::ClientSecretBasic,
            "client_secret_post" => TokenEndpointAuth::ClientSecretPost,
            "none" => TokenEndpointAuth::None,
            "private_key_jwt" => TokenEndpointAuth::PrivateKeyJwt,
            _ => return None,
        })
    }
}

/// A client identity at an authorization server. `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientRegistration {
    /// The client id (for a metadata document: its HTTPS URL).
    pub client_id: String,
    /// The client secret, for confidential clients.
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub auth_method: TokenEndpointAuth,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// What is kept per server between runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAuth {
    /// The current tokens.
    pub tokens: OAuthTokens,
    /// The client identity they were issued to (a registration is reused).
    pub client: Option<ClientRegistration>,
}

/// Where tokens are kept between connections (and runs).
pub trait TokenStore: Send + Sync {
    /// The stored state for `server`, if any.
    fn load(&self, server: &str) -> Option<StoredAuth>;
    /// Replaces the stored state for `server`.
    fn save(&self, server: &str, auth: &StoredAuth);
    /// Forgets `server`'s tokens.
    fn clear(&self, server: &str);
}

/// Tokens in memory only.
#[derive(Default)]
pub struct MemoryTokenStore {
    map: Mutex<std::collections::HashMap<String, StoredAuth>>,
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, server: &str) -> Option<StoredAuth> {
        self.map.lock().get(server).cloned()
    }
    fn save(&self, server: &str, auth: &StoredAuth) {
        self.map.lock().insert(server.to_owned(), auth.clone());
    }
    fn clear(&self, server: &str) {
        self.map.lock().remove(server);
    }
}

/// Opens the authorization URL for a person and returns the URL the
/// authorization server redirected to (carrying `code` and `state`).
pub trait AuthorizationHandler: Send + Sync {
    /// `authorization_url` is to be opened; `redirect_uri` is where the
    /// server will send the browser back.
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String>;
}

/// Follows the authorization URL with plain HTTP requests (no browser) and
/// returns the redirect `Location` that points at the redirect URI. For
/// tests, the conformance suite, and servers that approve automatically.
pub struct HeadlessAuthorizer {
    agent: Agent,
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        HeadlessAuthorizer {
            agent: auth_agent(0),
        }
    }
}

impl AuthorizationHandler for HeadlessAuthorizer {
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String> {
        let mut url = authorization_url.to_owned();
        for _ in 0..10 {
            let resp = self
                .agent
                .get(&url)
                .call()
                .map_err(|e| format!("GET authorization URL failed: {e}"))?;
            let status = resp.status().as_u16();
            let location = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match location {
                Some(loc) if (300..400).contains(&status) => {
                    let loc = if loc.starts_with('/') {
                        let (origin, _) = url::split(&url).ok_or("bad authorization URL")?;
                        format!("{origin}{loc}")
                    } else {
                        loc
                    };
                    if loc.starts_with(redirect_uri) {
                        return Ok(loc);
                    }
                    url = loc;
                }
                _ => {
                    return Err(format!(
                        "the authorization endpoint answered HTTP {status} without redirecting"
                    ))
                }
            }
        }
        Err("too many redirects at the authorization endpoint".into())
    }
}

/// For a person at a terminal: shows the authorization URL (by default on
/// stderr), listens on the loopback address and port of the redirect URI,
/// and returns the redirect the browser makes to it (RFC 8252 §7.3).
pub struct LoopbackAuthorizer {
    show: Box<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl Default for LoopbackAuthorizer {
    fn default() -> Self {
        LoopbackAuthorizer::new(|url| {
            eprintln!("Open this URL in a browser to authorize:\n  {url}")
        })
    }
}

impl LoopbackAuthorizer {
    /// Calls `show` with the authorization URL (to print it, or open a browser).
    pub fn new(show: impl Fn(&str) + Send + Sync + 'static) -> LoopbackAuthorizer {
        LoopbackAuthorizer {
            show: Box::new(show),
            timeout: crate::limits::AUTH_LOOPBACK_TIMEOUT,
        }
    }

    /// How long to wait for the browser (default
    /// [`AUTH_LOOPBACK_TIMEOUT`](crate::limits::AUTH_LOOPBACK_TIMEOUT)).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }
}

impl AuthorizationHandler for LoopbackAuthorizer {
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String> {
        use std::io::Write;
        let (origin, path) = url::split(redirect_uri).ok_or("the redirect URI is not http")?;
        let hostport = origin.trim_start_matches("http://");
        if !(hostport.starts_with("127.0.0.1:")
            || hostport.starts_with("localhost:")
            || hostport.starts_with("[::1]:"))
        {
            return Err(format!(
                "the redirect URI {redirect_uri} is not a loopback address with a port"
            ));
        }
        let bind = hostport.replace("localhost", "127.0.0.1");
        let listener = std::net::TcpListener::bind(&bind)
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        (self.show)(authorization_url);
        let deadline = std::time::Instant::now() + self.timeout;
        loop {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut line = String::new();
                    let mut reader =
                        std::io::BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
                    let _ = std::io::BufRead::read_line(&mut reader, &mut line);
                    let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let ok = target.starts_with(&path) || path.is_empty();
                    let body = if ok {
                        "Authorized. You can close this window."
                    } else {
                        "Not the authorization redirect."
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        if ok { "200 OK" } else { "404 Not Found" },
                        body.len()
                    );
                    if ok {
                        return Ok(format!("{origin}{target}"));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if std::time::Instant::now() >= deadline {
                        return Err("no redirect arrived before the deadline".into());
                    }
                    // Waiting for a person's browser: a short poll is fine here.
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("accepting the redirect failed: {e}")),
            }
        }
    }
}

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
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "client_assertion_key",
                &self.client_assertion_key.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .field("scope", &self.scope)
            .field("grant", &self.grant)
            .field("identity", &self.identity)
            .finish()
    }
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            client_id: None,
            client_secret: None,
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
        }
    }
}

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
            defaults: false,
        })
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
        OAuthClient {
            server: server.to_owned(),
            server_url: server_url.to_owned(),
            opts,
            agent: auth_agent(0),
            state: Mutex::new(State {
                stored,
                step_ups: 0,
            }),
            flow: Mutex::new(()),
        }
    }

    fn err(&self, message: impl Into<String>) -> McpError {
        McpError::Auth {
            server: self.server.clone(),
            message: message.into(),
        }
    }

    /// The `Authorization` header value to send, refreshing an expired
    /// token first when a refresh token is available.
    pub fn authorization(&self) -> Option<String> {
        let stored = self.state.lock().stored.clone()?;
        let expired = stored
            .tokens
            .expires_at
            .is_some_and(|t| t <= SystemTime::now() + AUTH_TOKEN_EXPIRY_MARGIN);
        if expired && stored.tokens.refresh_token.is_some() {
            if let Ok(t) = self.refresh(&stored) {
                return Some(format!("Bearer {}", t.access_token));
            }
        }
        Some(format!("Bearer {}", stored.tokens.access_token))
    }

    /// The `Authorization` value of the current token, without refreshing.
    pub fn current(&self) -> Option<String> {
        self.state
            .lock()
            .stored
            .as_ref()
            .map(|s| format!("Bearer {}", s.tokens.access_token))
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
        let current = self
            .state
            .lock()
            .stored
            .as_ref()
            .map(|s| format!("Bearer {}", s.tokens.access_token));
        if current.is_some() && current.as_deref() != sent && status == 401 {
            return Ok(());
        }
        let challenge = www_authenticate.and_then(parse_bearer).unwrap_or_default();
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

    fn fetch_json(&self, url: &str) -> Result<Fetched> {
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

    fn discover_resource(&self, challenge: &BearerChallenge) -> Result<Option<ResourceMetadata>> {
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

    fn discover_auth_server(&self, issuer: &str) -> Result<Option<AuthServerMetadata>> {
        for u in authorization_server_metadata_urls(issuer) {
            if let Fetched::Json(v) = self.fetch_json(&u)? {
                if let Some(m) = AuthServerMetadata::from_json(&v) {
                    return Ok(Some(m));
                }
            }
        }
        Ok(None)
    }

    /// 2025-03-26: the server's origin is the authorization base URL; its
    /// metadata, else the default endpoints.
    fn legacy_auth_server(&self) -> Result<AuthServerMetadata> {
        let (origin, _) = url::split(&self.server_url)
            .ok_or_else(|| self.err("the server URL is not http(s)"))?;
        if let Fetched::Json(v) =
            self.fetch_json(&format!("{origin}/.well-known/oauth-authorization-server"))?
        {
            if let Some(m) = AuthServerMetadata::from_json(&v) {
                return Ok(m);
            }
        }
        Ok(AuthServerMetadata {
            issuer: Some(origin.clone()),
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            defaults: true,
            ..AuthServerMetadata::default()
        })
    }

    fn authorize(&self, challenge: &BearerChallenge, previous_scope: Option<String>) -> Result<()> {
        let resource_meta = self.discover_resource(challenge)?;
        let resource = match &resource_meta {
            Some(rm) => {
                let mine = url::canonical_resource(&self.server_url);
                if let Some(r) = &rm.resource {
                    let theirs = url::canonical_resource(r);
                    if !(mine == theirs || mine.starts_with(&format!("{theirs}/"))) {
                        return Err(self.err(format!(
                            "the protected resource metadata names resource {r}, which is not this server ({mine})"
                        )));
                    }
                }
                rm.resource.clone().unwrap_or(mine)
            }
            None => url::canonical_resource(&self.server_url),
        };
        let meta = match &resource_meta {
            Some(rm) => {
                let mut found = None;
                for issuer in &rm.authorization_servers {
                    if let Some(m) = self.discover_auth_server(issuer)? {
                        found = Some(m);
                        break;
                    }
                }
                found.ok_or_else(|| self.err("no authorization server metadata found"))?
            }
            None => self.legacy_auth_server()?,
        };
        let mut scope = self
            .opts
            .scope
            .clone()
            .or_else(|| challenge.scope.clone())
            .or_else(|| {
                resource_meta
                    .as_ref()
                    .filter(|r| !r.scopes_supported.is_empty())
                    .map(|r| r.scopes_supported.join(" "))
            });
        if previous_scope.is_some() {
            scope = union_scopes(previous_scope.as_deref(), scope.as_deref());
        }
        if self.opts.grant == Grant::AuthorizationCode
            && meta.scopes_supported.iter().any(|s| s == "offline_access")
            && (meta.grant_types_supported.is_empty()
                || meta
                    .grant_types_supported
                    .iter()
                    .any(|g| g == "refresh_token"))
        {
            scope = union_scopes(scope.as_deref(), Some("offline_access"));
        }
        let client = self.client_identity(&meta)?;
        let tokens = match self.opts.grant {
            Grant::CrossAppAccess => {
                let jag = self.exchange_identity(&meta, &resource, scope.as_deref())?;
                let mut form: Vec<(&str, &str)> =
                    vec![("grant_type", JWT_BEARER_GRANT), ("assertion", &jag)];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                self.token_request(&meta, &client, form)?
            }
            Grant::ClientCredentials => {
                let mut form: Vec<(&str, &str)> = vec![
                    ("grant_type", "client_credentials"),
                    ("resource", &resource),
                ];
                if let Some(s) = &scope {
                    form.push(("scope", s));
                }
                self.token_request(&meta, &client, form)?
            }
            Grant::AuthorizationCode => {
                if !meta.defaults {
                    match &meta.code_challenge_methods_supported {
                        Some(m) if m.iter().any(|x| x == "S256") => {}
                        Some(_) => {
                            return Err(
                                self.err("the authorization server does not support PKCE S256")
                            )
                        }
                        None => {
                            return Err(self.err(
                                "the authorization server metadata does not declare PKCE support",
                            ))
                        }
                    }
                }
                let verifier =
                    pkce::verifier().map_err(|e| self.err(format!("no randomness: {e}")))?;
                let state =
                    pkce::random_token(16).map_err(|e| self.err(format!("no randomness: {e}")))?;
                let challenge = pkce::challenge(&verifier);
                let mut q: Vec<(&str, &str)> = vec![
                    ("response_type", "code"),
                    ("client_id", &client.client_id),
                    ("redirect_uri", &self.opts.redirect_uri),
                    ("code_challenge", &challenge),
                    ("code_challenge_method", "S256"),
                    ("state", &state),
                    ("resource", &resource),
                ];
                if let Some(s) = &scope {
                    q.push(("scope", s));
                }
                let auth_url = url::with_query(&meta.authorization_endpoint, &q);
                let redirected = self
                    .opts
                    .authorizer
                    .authorize(&auth_url, &self.opts.redirect_uri)
                    .map_err(|m| self.err(format!("authorization failed: {m}")))?;
                let params = url::query_params(&redirected);
                let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                if let Some(e) = get("error") {
                    return Err(self.err(format!("the authorization server refused: {e}")));
                }
                if get("state").as_deref() != Some(state.as_str()) {
                    return Err(self
                        .err("the redirect's state does not match the request's (possible CSRF)"));
                }
                let code = get("code").ok_or_else(|| self.err("the redirect carries no code"))?;
                let form: Vec<(&str, &str)> = vec![
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", &self.opts.redirect_uri),
                    ("code_verifier", &verifier),
                    ("resource", &resource),
                ];
                self.token_request(&meta, &client, form)?
            }
        };
        let stored = StoredAuth {
            tokens: OAuthTokens {
                scope: tokens.scope.clone().or(scope),
                ..tokens
            },
            client: Some(client),
        };
        self.opts.token_store.save(&self.server, &stored);
        self.state.lock().stored = Some(stored);
        ::log::info!(target: "mcp_client", "[{}] authorized with OAuth", self.server);
        Ok(())
    }

    /// Exchanges the user's ID token at the identity provider for an
    /// identity assertion grant (ID-JAG) meant for `meta`'s authorization
    /// server and `resource` (RFC 8693; SEP-990).
    fn exchange_identity(
        &self,
        meta: &AuthServerMetadata,
        resource: &str,
        scope: Option<&str>,
    ) -> Result<String> {
        let id = self
            .opts
            .identity
            .as_ref()
            .ok_or_else(|| self.err("cross-app access needs OAuthOptions::identity"))?;
        let audience = meta.issuer.clone().ok_or_else(|| {
            self.err("cross-app access needs the authorization server's issuer (from its metadata)")
        })?;
        let mut form: Vec<(&str, &str)> = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("subject_token", &id.id_token),
            ("subject_token_type", ID_TOKEN_TYPE),
            ("audience", &audience),
            ("resource", resource),
        ];
        if let Some(s) = scope {
            form.push(("scope", s));
        }
        let mut rb = self
            .agent
            .post(&id.idp_token_endpoint)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json");
        match (&id.idp_client_id, &id.idp_client_secret) {
            (Some(cid), Some(secret)) => rb = rb.header("Authorization", basic_auth(cid, secret)),
            (Some(cid), None) => form.push(("client_id", cid)),
            _ => {}
        }
        let v = self.json_answer(
            rb.send(url::form(&form).as_bytes()),
            "the identity provider's token exchange",
            "the identity provider's token exchange",
            "the identity provider answered the token exchange with",
        )?;
        if let Some(t) = v.get("issued_token_type").and_then(Value::as_str) {
            if t != ID_JAG_TOKEN_TYPE {
                return Err(self.err(format!(
                    "the identity provider issued a {t}, not an identity assertion grant"
                )));
            }
        }
        v.get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| self.err("the token exchange response has no access_token"))
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

    fn client_identity(&self, meta: &AuthServerMetadata) -> Result<ClientRegistration> {
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
        if let (Some(id), Some(_)) = (&self.opts.client_id, &self.opts.client_assertion_key) {
            return Ok(ClientRegistration {
                client_id: id.clone(),
                client_secret: None,
                auth_method: TokenEndpointAuth::PrivateKeyJwt,
            });
        }
        if let Some(id) = &self.opts.client_id {
            return Ok(ClientRegistration {
                client_id: id.clone(),
                client_secret: self.opts.client_secret.clone(),
                auth_method: pick_auth(self.opts.client_secret.is_some()),
            });
        }
        if let Some(prev) = self
            .state
            .lock()
            .stored
            .as_ref()
            .and_then(|s| s.client.clone())
        {
            return Ok(prev);
        }
        if let Some(url) = &self.opts.client_metadata_url {
            if meta.client_id_metadata_document_supported {
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
        let body = serde_json::json!({
            "client_name": self.opts.client_name,
            "application_type": application_type,
            "redirect_uris": [self.opts.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        });
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

    fn token_request<'a>(
        &self,
        meta: &AuthServerMetadata,
        client: &'a ClientRegistration,
        form: Vec<(&'a str, &'a str)>,
    ) -> Result<OAuthTokens> {
        // Declared before the rebinding below, so it outlives the borrow.
        let assertion: String;
        let mut form: Vec<(&str, &str)> = form;
        let mut rb = self
            .agent
            .post(&meta.token_endpoint)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json");
        if client.auth_method == TokenEndpointAuth::PrivateKeyJwt {
            let pem = self
                .opts
                .client_assertion_key
                .as_deref()
                .ok_or_else(|| self.err("private_key_jwt needs client_assertion_key"))?;
            let audience = meta.issuer.clone().unwrap_or_else(|| {
                url::split(&meta.token_endpoint)
                    .map(|(o, _)| o)
                    .unwrap_or_default()
            });
            assertion =
                client_assertion(pem, &client.client_id, &audience).map_err(|m| self.err(m))?;
            form.push(("client_id", &client.client_id));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            form.push(("client_assertion", &assertion));
        }
        match (client.auth_method, &client.client_secret) {
            (TokenEndpointAuth::PrivateKeyJwt, _) => {}
            (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => {
                rb = rb.header("Authorization", basic_auth(&client.client_id, secret));
            }
            (TokenEndpointAuth::ClientSecretPost, Some(secret)) => {
                form.push(("client_id", &client.client_id));
                form.push(("client_secret", secret));
            }
            _ => form.push(("client_id", &client.client_id)),
        }
        let v = self.json_answer(
            rb.send(url::form(&form).as_bytes()),
            "token request",
            "token response",
            "the token endpoint answered",
        )?;
        let access_token = v
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err("the token response has no access_token"))?
            .to_owned();
        if let Some(t) = v.get("token_type").and_then(Value::as_str) {
            if !t.eq_ignore_ascii_case("bearer") {
                return Err(self.err(format!("unsupported token_type {t:?}")));
            }
        }
        Ok(OAuthTokens {
            access_token,
            refresh_token: crate::json::opt_str(&v, "refresh_token"),
            expires_at: v
                .get("expires_in")
                .and_then(Value::as_u64)
                .map(|s| SystemTime::now() + Duration::from_secs(s)),
            scope: crate::json::opt_str(&v, "scope"),
        })
    }

    fn refresh(&self, stored: &StoredAuth) -> Result<OAuthTokens> {
        let refresh = stored
            .tokens
            .refresh_token
            .as_deref()
            .ok_or_else(|| self.err("no refresh token"))?;
        let client = stored
            .client
            .clone()
            .ok_or_else(|| self.err("no client for the refresh"))?;
        let resource_meta = self.discover_resource(&BearerChallenge::default())?;
        let meta = match &resource_meta {
            Some(rm) => rm
                .authorization_servers
                .iter()
                .find_map(|i| self.discover_auth_server(i).ok().flatten())
                .ok_or_else(|| self.err("no authorization server metadata found"))?,
            None => self.legacy_auth_server()?,
        };
        let resource = url::canonical_resource(&self.server_url);
        let form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("resource", resource.as_str()),
        ];
        let mut tokens = self.token_request(&meta, &client, form)?;
        if tokens.refresh_token.is_none() {
            tokens.refresh_token = stored.tokens.refresh_token.clone();
        }
        if tokens.scope.is_none() {
            tokens.scope = stored.tokens.scope.clone();
        }
        let new = StoredAuth {
            tokens: tokens.clone(),
            client: Some(client),
        };
        self.opts.token_store.save(&self.server, &new);
        self.state.lock().stored = Some(new);
        ::log::info!(target: "mcp_client", "[{}] OAuth token refreshed", self.server);
        Ok(tokens)
    }
}

/// An RFC 7523 client assertion: a JWT signed with ES256 by `pem`, with
/// `iss` = `sub` = the client id, `aud` = the authorization server, and a
/// five-minute lifetime.
fn client_assertion(
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
fn basic_auth(client_id: &str, secret: &str) -> String {
    let creds = format!("{}:{}", url::encode(client_id), url::encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(creds)
    )
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
