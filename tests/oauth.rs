//! OAuth against a real authorization server + protected MCP server
//! (scripts/oauth_mcp_server.py): discovery, dynamic registration, PKCE,
//! state, resource indicators, step-up, refresh, and loops that stop.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use skald_mcp::auth::{MemoryTokenStore, OAuthOptions};
use skald_mcp::{ClientOptions, McpError, McpHttpServer, McpServerClient, McpServerConfig};

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(mode: &str) -> Server {
    let mut child = Command::new("python3")
        .args([&repo_path("scripts/oauth_mcp_server.py"), "--mode", mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the OAuth server started");
    let port = line
        .trim()
        .strip_prefix("READY ")
        .expect("READY line")
        .parse()
        .unwrap();
    Server { child, port }
}

impl Server {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
    fn received(&self) -> Vec<Value> {
        let resp = ureq::get(&format!("http://127.0.0.1:{}/_received", self.port))
            .call()
            .unwrap();
        serde_json::from_reader(resp.into_body().into_reader()).unwrap()
    }
}

fn connect(s: &Server, oauth: OAuthOptions) -> skald_mcp::Result<McpHttpServer> {
    let mut opts = test_options();
    opts.oauth = Some(oauth);
    McpHttpServer::connect(&McpServerConfig::http("secured", s.url()), opts)
}

fn opts_with(opts: ClientOptions, oauth: OAuthOptions) -> ClientOptions {
    let mut o = opts;
    o.oauth = Some(oauth);
    o
}

#[test]
fn dynamic_registration_pkce_and_resource() {
    let s = start("default");
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let c = McpHttpServer::connect(
        &McpServerConfig::http("secured", s.url()),
        opts_with(test_options().logs(ltx), OAuthOptions::default()),
    )
    .unwrap();
    let who = text(c.call_tool("whoami", json!({})).unwrap());
    assert!(
        who.starts_with("dyn-") && who.ends_with(" mcp:read"),
        "{who}"
    );
    let r = s.received();
    let paths: Vec<&str> = r.iter().map(|m| m["path"].as_str().unwrap()).collect();
    // 401 first, then PRM from the challenge, AS metadata, registration, authorize, token.
    let pos = |p: &str| {
        paths
            .iter()
            .position(|x| *x == p)
            .unwrap_or_else(|| panic!("{p} not requested: {paths:?}"))
    };
    assert!(pos("/mcp") < pos("/.well-known/oauth-protected-resource/mcp"));
    assert!(
        pos("/.well-known/oauth-protected-resource/mcp")
            < pos("/.well-known/oauth-authorization-server")
    );
    assert!(pos("/register") < pos("/authorize") && pos("/authorize") < pos("/token"));
    let authz = &r[pos("/authorize")]["query"];
    assert_eq!(authz["code_challenge_method"], "S256");
    assert_eq!(authz["resource"], s.url());
    assert_eq!(authz["scope"], "mcp:read");
    assert!(authz["state"].as_str().unwrap().len() >= 16);
    let token = &r[pos("/token")]["form"];
    assert_eq!(token["grant_type"], "authorization_code");
    assert_eq!(token["resource"], s.url());
    assert!(token["code_verifier"].as_str().unwrap().len() >= 43);
    // Every MCP request after the flow carries the token.
    let bearer: Vec<&str> = r
        .iter()
        .filter(|m| m["path"] == "/mcp")
        .filter_map(|m| m["headers"]["authorization"].as_str())
        .collect();
    assert!(!bearer.is_empty() && bearer.iter().all(|b| b.starts_with("Bearer at-")));
    // No token or secret reached a log line.
    c.close().unwrap();
    let secrets: Vec<String> = bearer.iter().map(|b| b[7..].to_string()).collect();
    for l in lrx.try_iter() {
        for sec in &secrets {
            assert!(!l.text.contains(sec.as_str()), "token in a log line: {l:?}");
        }
    }
}

#[test]
fn pre_registered_client_with_basic_auth() {
    let s = start("default");
    let c = connect(
        &s,
        OAuthOptions {
            client_id: Some("pre-1".into()),
            client_secret: Some("pre-secret".into()),
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("pre-1 "));
    let r = s.received();
    assert!(
        !r.iter().any(|m| m["path"] == "/register"),
        "a pre-registered client must not register"
    );
    let token = r.iter().find(|m| m["path"] == "/token").unwrap();
    assert!(token["headers"]["authorization"]
        .as_str()
        .unwrap()
        .starts_with("Basic "));
    assert!(
        token["form"].get("client_secret").is_none(),
        "the secret must not also be in the body"
    );
}

#[test]
fn step_up_on_insufficient_scope() {
    let s = start("default");
    let c = connect(&s, OAuthOptions::default()).unwrap();
    assert_eq!(text(c.call_tool("admin", json!({})).unwrap()), "admin ok");
    let r = s.received();
    let authorizes: Vec<&Value> = r.iter().filter(|m| m["path"] == "/authorize").collect();
    assert_eq!(authorizes.len(), 2);
    assert_eq!(authorizes[1]["query"]["scope"], "mcp:read mcp:admin");
}

#[test]
fn step_up_stops_at_its_limit() {
    let s = start("never_admin");
    let c = connect(
        &s,
        OAuthOptions {
            max_step_ups: 2,
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    match c.call_tool("admin", json!({})) {
        Err(McpError::Auth { message, .. }) => {
            assert!(message.contains("insufficient_scope"), "{message}")
        }
        other => panic!("expected an auth error, got {other:?}"),
    }
    let n = s
        .received()
        .iter()
        .filter(|m| m["path"] == "/authorize")
        .count();
    assert_eq!(n, 3, "one initial authorization and two step-ups");
    // The connection still works for what the token allows.
    assert!(c.call_tool("whoami", json!({})).is_ok());
}

#[test]
fn a_401_loop_stops() {
    let s = start("always_401");
    match connect(&s, OAuthOptions::default()) {
        Err(McpError::Auth { message, .. }) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected an auth error, got {other:?}"),
    }
    let n = s
        .received()
        .iter()
        .filter(|m| m["path"] == "/token")
        .count();
    assert!(n <= 3, "{n} token requests");
}

#[test]
fn state_mismatch_is_refused() {
    let s = start("bad_state");
    match connect(&s, OAuthOptions::default()) {
        Err(McpError::Auth { message, .. }) => assert!(message.contains("state"), "{message}"),
        other => panic!("expected an auth error, got {other:?}"),
    }
    assert!(
        !s.received().iter().any(|m| m["path"] == "/token"),
        "a code with a wrong state was redeemed"
    );
}

#[test]
fn missing_pkce_support_is_refused() {
    let s = start("no_pkce");
    match connect(&s, OAuthOptions::default()) {
        Err(McpError::Auth { message, .. }) => assert!(message.contains("PKCE"), "{message}"),
        other => panic!("expected an auth error, got {other:?}"),
    }
}

#[test]
fn expiring_tokens_are_refreshed() {
    let s = start("short_tokens");
    let c = connect(&s, OAuthOptions::default()).unwrap();
    c.call_tool("whoami", json!({})).unwrap();
    c.call_tool("whoami", json!({})).unwrap();
    let r = s.received();
    assert!(
        r.iter()
            .any(|m| m["path"] == "/token" && m["form"]["grant_type"] == "refresh_token"),
        "no refresh grant"
    );
    assert_eq!(
        r.iter().filter(|m| m["path"] == "/authorize").count(),
        1,
        "refresh must not re-authorize"
    );
}

#[test]
fn stored_tokens_are_reused_by_the_next_connection() {
    let s = start("default");
    let store = Arc::new(MemoryTokenStore::default());
    let oauth = OAuthOptions {
        token_store: store.clone(),
        ..OAuthOptions::default()
    };
    connect(&s, oauth.clone()).unwrap().close().unwrap();
    let c = connect(&s, oauth).unwrap();
    c.call_tool("whoami", json!({})).unwrap();
    assert_eq!(
        s.received()
            .iter()
            .filter(|m| m["path"] == "/authorize")
            .count(),
        1
    );
}

#[test]
fn client_credentials_grant() {
    let s = start("default");
    let c = connect(
        &s,
        OAuthOptions {
            client_id: Some("pre-machine".into()),
            client_secret: Some("pre-secret".into()),
            grant: skald_mcp::auth::Grant::ClientCredentials,
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("pre-machine"));
    let r = s.received();
    assert!(!r.iter().any(|m| m["path"] == "/authorize"));
    assert!(r
        .iter()
        .any(|m| m["path"] == "/token" && m["form"]["grant_type"] == "client_credentials"));
}

fn cross_app(s: &Server) -> OAuthOptions {
    OAuthOptions {
        client_id: Some("pre-enterprise".into()),
        client_secret: Some("pre-secret".into()),
        grant: skald_mcp::auth::Grant::CrossAppAccess,
        identity: Some(skald_mcp::auth::IdentityAssertion {
            idp_token_endpoint: format!("http://127.0.0.1:{}/idp/token", s.port),
            id_token: "id-token-alice".into(),
            idp_client_id: Some("idp-client".into()),
            idp_client_secret: None,
        }),
        ..OAuthOptions::default()
    }
}

/// SEP-990: the ID token is exchanged at the IdP for an ID-JAG naming this
/// authorization server and resource, which the authorization server takes
/// as a JWT bearer grant from the authenticated client. No browser.
#[test]
fn cross_app_access_exchanges_the_id_token_then_presents_the_grant() {
    let s = start("default");
    let c = connect(&s, cross_app(&s)).unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("pre-enterprise"));
    let r = s.received();
    assert!(!r.iter().any(|m| m["path"] == "/authorize"));
    let exchange = r
        .iter()
        .find(|m| m["path"] == "/idp/token")
        .expect("a token exchange at the IdP");
    let f = &exchange["form"];
    assert_eq!(
        f["grant_type"],
        "urn:ietf:params:oauth:grant-type:token-exchange"
    );
    assert_eq!(f["subject_token"], "id-token-alice");
    assert_eq!(f["client_id"], "idp-client");
    let grant = r
        .iter()
        .find(|m| m["path"] == "/token")
        .expect("a JWT bearer grant at the AS");
    assert_eq!(
        grant["form"]["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert!(grant["form"]["assertion"]
        .as_str()
        .unwrap()
        .starts_with("jag-"));
    let auth = grant["headers"]["authorization"]
        .as_str()
        .unwrap_or_default();
    assert!(auth.starts_with("Basic "), "client_secret_basic: {auth:?}");
}

#[test]
fn cross_app_access_failures_are_typed_auth_errors() {
    for (mode, want) in [
        ("idp_refuses", "user not entitled"),
        ("idp_wrong_type", "not an identity assertion grant"),
    ] {
        let s = start(mode);
        match connect(&s, cross_app(&s)) {
            Err(McpError::Auth { message, .. }) => {
                assert!(message.contains(want), "{mode}: {message}")
            }
            other => panic!("{mode}: expected an Auth error, got {other:?}"),
        }
    }
    let s = start("default");
    let opts = OAuthOptions {
        identity: None,
        ..cross_app(&s)
    };
    match connect(&s, opts) {
        Err(McpError::Auth { message, .. }) => {
            assert!(message.contains("OAuthOptions::identity"), "{message}")
        }
        other => panic!("expected an Auth error, got {other:?}"),
    }
}

#[test]
fn tokens_persist_in_the_sqlite_store_across_reopening() {
    let s = start("default");
    let dir = std::env::temp_dir().join(format!("skald-oauth-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let open = || {
        skald_mcp::store::Store::open(skald_mcp::store::StoreConfig::new(
            dir.join("mcp.db"),
            dir.join("logs"),
        ))
        .unwrap()
    };
    {
        let store = open();
        let oauth = OAuthOptions {
            token_store: Arc::new(store.handle()),
            ..OAuthOptions::default()
        };
        connect(&s, oauth).unwrap().close().unwrap();
        let saved = store.oauth_load("secured").unwrap().expect("tokens saved");
        assert!(saved.tokens.access_token.starts_with("at-"));
        assert!(saved.client.unwrap().client_id.starts_with("dyn-"));
        store.close().unwrap();
    }
    let store = open();
    let oauth = OAuthOptions {
        token_store: Arc::new(store.handle()),
        ..OAuthOptions::default()
    };
    let c = connect(&s, oauth).unwrap();
    c.call_tool("whoami", json!({})).unwrap();
    assert_eq!(
        s.received()
            .iter()
            .filter(|m| m["path"] == "/authorize")
            .count(),
        1,
        "re-authorized despite stored tokens"
    );
    assert!(store.oauth_clear("secured").unwrap());
    drop(c);
    store.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_loopback_authorizer_receives_the_browser_redirect() {
    let s = start("default");
    // A free port for the redirect URI.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The "browser": follows the authorization URL, redirects included, which
    // lands on the loopback listener.
    let browser = skald_mcp::auth::LoopbackAuthorizer::new(|url: &str| {
        let url = url.to_owned();
        std::thread::spawn(move || {
            let _ = ureq::get(&url).call();
        });
    })
    .timeout(Duration::from_secs(20));
    let c = connect(
        &s,
        OAuthOptions {
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
            authorizer: Arc::new(browser),
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("dyn-"));
}
