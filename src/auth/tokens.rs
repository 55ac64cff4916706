//! What OAuth leaves behind: tokens, the client registration, and where
//! they are kept ([`TokenStore`]).

use super::*;

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
    /// The client identity they were issued to (a registration is reused,
    /// but only with [`issuer`](Self::issuer)).
    pub client: Option<ClientRegistration>,
    /// The issuer of the authorization server that issued the tokens and
    /// the client registration: the refresh token and the client
    /// credentials are only ever sent back to it (MCP 2026-07-28,
    /// "Authorization Server Binding"). `None` for state saved before the
    /// issuer was recorded: the access token is still presented to the
    /// resource, but its refresh token and client are never sent to any
    /// authorization server again (the next authorization starts afresh).
    pub issuer: Option<String>,
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
