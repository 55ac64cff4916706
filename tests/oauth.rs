//! OAuth against a real authorization server + protected MCP server
//! (scripts/oauth_mcp_server.py): discovery, dynamic registration, PKCE,
//! state, resource indicators, step-up, refresh, and loops that stop; and
//! the attacks refused: mix-up (metadata or `iss` naming another issuer),
//! plain-HTTP endpoints, credentials carried to another authorization server.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use skald_mcp::auth::{AuthRefusal, MemoryTokenStore, OAuthOptions, TokenStore};
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
        assert_eq!(
            saved.issuer,
            Some(format!("http://127.0.0.1:{}", s.port)),
            "the issuer is stored with the credentials"
        );
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

/// The refusal behind an [`McpError::AuthRefused`], or a panic naming what
/// came instead.
fn refusal<T: std::fmt::Debug>(r: skald_mcp::Result<T>, what: &str) -> AuthRefusal {
    match r {
        Err(McpError::AuthRefused { refusal, .. }) => *refusal,
        other => panic!("{what}: expected an AuthRefused error, got {other:?}"),
    }
}

fn requested(s: &Server, path: &str) -> usize {
    s.received().iter().filter(|m| m["path"] == path).count()
}

/// RFC 8414 §3.3: metadata fetched for the resource's issuer that declares
/// another issuer is not used: no registration, no authorization request,
/// no code or verifier at the token endpoint it names.
#[test]
fn metadata_naming_another_issuer_is_refused() {
    let s = start("mixup");
    let r = refusal(connect(&s, OAuthOptions::default()), "mixup");
    let base = format!("http://127.0.0.1:{}", s.port);
    match &r {
        AuthRefusal::MetadataIssuerMismatch {
            expected,
            found,
            url,
        } => {
            assert_eq!(expected, &base);
            assert_eq!(found.as_deref(), Some("https://attacker.example"));
            assert_eq!(
                url,
                &format!("{base}/.well-known/oauth-authorization-server")
            );
        }
        other => panic!("{other:?}"),
    }
    let text = r.to_string();
    assert!(
        text.contains(&base) && text.contains("https://attacker.example"),
        "{text}"
    );
    for p in ["/register", "/authorize", "/token"] {
        assert_eq!(requested(&s, p), 0, "{p} was used");
    }
}

/// RFC 9207 as MCP 2026-07-28 tabulates it: each bad authorization response
/// is refused before its code reaches the token endpoint.
#[test]
fn authorization_responses_from_the_wrong_issuer_are_refused() {
    for mode in [
        "wrong_iss",
        "unadvertised_wrong_iss",
        "missing_iss",
        "normalized_iss",
        "wrong_iss_error",
    ] {
        let s = start(mode);
        let base = format!("http://127.0.0.1:{}", s.port);
        let r = refusal(connect(&s, OAuthOptions::default()), mode);
        match (mode, &r) {
            ("missing_iss", AuthRefusal::ResponseIssuerMissing { expected }) => {
                assert_eq!(expected, &base)
            }
            ("normalized_iss", AuthRefusal::ResponseIssuerMismatch { expected, found }) => {
                assert_eq!(expected, &base);
                assert_eq!(found, &format!("{base}/"));
            }
            (_, AuthRefusal::ResponseIssuerMismatch { expected, found }) => {
                assert_eq!(expected, &base);
                assert_eq!(found, "https://evil.example");
            }
            _ => panic!("{mode}: {r:?}"),
        }
        // An error response from the wrong issuer is not shown either.
        assert!(!r.to_string().contains("ATTACKER-CHOSEN"), "{mode}: {r}");
        assert_eq!(requested(&s, "/authorize"), 1, "{mode}");
        assert_eq!(requested(&s, "/token"), 0, "{mode}: the code was redeemed");
    }
}

/// A server that neither advertises nor sends `iss` (before RFC 9207) is
/// still usable; the default server advertises and sends the right one.
#[test]
fn responses_without_iss_proceed_when_it_is_not_advertised() {
    for mode in ["no_iss", "default"] {
        let s = start(mode);
        let c = connect(&s, OAuthOptions::default()).unwrap();
        assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("dyn-"));
        assert_eq!(requested(&s, "/token"), 1, "{mode}");
    }
}

#[test]
fn plain_http_endpoints_off_loopback_are_refused() {
    let s = start("insecure_endpoints");
    match refusal(connect(&s, OAuthOptions::default()), "insecure") {
        AuthRefusal::InsecureEndpoint { what, url } => {
            assert_eq!(what, "token endpoint");
            assert_eq!(url, "http://auth.example.invalid/token");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(requested(&s, "/register"), 0);
    // A redirect URI that would carry the code over plain HTTP.
    let s = start("default");
    let r = refusal(
        connect(
            &s,
            OAuthOptions {
                redirect_uri: "http://app.example/callback".into(),
                ..OAuthOptions::default()
            },
        ),
        "redirect",
    );
    assert!(
        matches!(&r, AuthRefusal::InsecureEndpoint { what, .. } if what == "redirect URI"),
        "{r:?}"
    );
    assert!(r.to_string().contains("https"), "{r}");
    assert_eq!(requested(&s, "/authorize"), 0);
}

/// SEP-2352: when the resource moves to another authorization server, the
/// client registers there, and neither the first server's client id nor its
/// refresh token is ever sent to the second.
#[test]
fn a_new_authorization_server_gets_a_new_registration_and_no_old_credentials() {
    let s = start("migration");
    let store = Arc::new(MemoryTokenStore::default());
    let c = connect(
        &s,
        OAuthOptions {
            token_store: store.clone(),
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    let first = text(c.call_tool("whoami", json!({})).unwrap());
    assert!(first.starts_with("dyn-"), "{first}");
    let as1_client = first.split(' ').next().unwrap().to_owned();
    let base = format!("http://127.0.0.1:{}", s.port);
    assert_eq!(
        store.load("secured").unwrap().issuer.as_deref(),
        Some(base.as_str())
    );
    let resp = ureq::post(&format!("{base}/_migrate"))
        .send_empty()
        .unwrap();
    assert_eq!(resp.status(), 200);
    let second = text(c.call_tool("whoami", json!({})).unwrap());
    assert!(second.starts_with("as2-dyn-"), "{second}");
    let r = s.received();
    assert_eq!(
        r.iter().filter(|m| m["path"] == "/as2/register").count(),
        1,
        "no registration at the new server"
    );
    for m in r
        .iter()
        .filter(|m| m["path"].as_str().unwrap().starts_with("/as2/"))
    {
        let seen = m.to_string();
        assert!(
            !seen.contains(&as1_client),
            "the old client id went to the new server: {seen}"
        );
        assert!(
            !seen.contains("\"rt-"),
            "a refresh token went to the new server: {seen}"
        );
    }
    assert_eq!(
        store.load("secured").unwrap().issuer,
        Some(format!("{base}/as2"))
    );
}

/// Pre-registered credentials bound to an issuer are not sent to another.
#[test]
fn pre_registered_credentials_stay_with_their_issuer() {
    let s = start("default");
    let pre = |issuer: String| OAuthOptions {
        client_id: Some("pre-1".into()),
        client_secret: Some("pre-secret".into()),
        client_issuer: Some(issuer),
        ..OAuthOptions::default()
    };
    let r = refusal(connect(&s, pre("https://other-as.example".into())), "bound");
    assert_eq!(
        r,
        AuthRefusal::CredentialsForAnotherIssuer {
            bound: "https://other-as.example".into(),
            current: format!("http://127.0.0.1:{}", s.port),
        }
    );
    assert_eq!(requested(&s, "/authorize") + requested(&s, "/token"), 0);
    let c = connect(&s, pre(format!("http://127.0.0.1:{}", s.port))).unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("pre-1 "));
}

/// State stored before issuers were recorded: its access token is still
/// used, but its refresh token is sent to no authorization server.
#[test]
fn stored_state_without_an_issuer_is_never_refreshed() {
    let s = start("default");
    let store = Arc::new(MemoryTokenStore::default());
    let oauth = OAuthOptions {
        token_store: store.clone(),
        ..OAuthOptions::default()
    };
    connect(&s, oauth.clone()).unwrap().close().unwrap();
    let mut old = store.load("secured").unwrap();
    assert!(old.tokens.refresh_token.is_some());
    old.issuer = None;
    // Expired as far as the client knows, so it would normally refresh.
    old.tokens.expires_at = Some(std::time::SystemTime::UNIX_EPOCH);
    store.save("secured", &old);
    let c = connect(&s, oauth).unwrap();
    c.call_tool("whoami", json!({})).unwrap();
    let r = s.received();
    assert!(
        !r.iter()
            .any(|m| m["path"] == "/token" && m["form"]["grant_type"] == "refresh_token"),
        "a refresh token of unknown origin was sent"
    );
    assert_eq!(requested(&s, "/authorize"), 1, "the old token still works");
}

fn workload_token(s: &Server, aud: &str, exp: i64) -> String {
    let resp = ureq::get(&format!(
        "http://127.0.0.1:{}/_workload_token?aud={aud}&exp={exp}",
        s.port
    ))
    .call()
    .unwrap();
    let v: Value = serde_json::from_reader(resp.into_body().into_reader()).unwrap();
    v["token"].as_str().unwrap().to_owned()
}

fn workload(assertion: Option<String>, client_id: Option<&str>) -> OAuthOptions {
    OAuthOptions {
        grant: skald_mcp::auth::Grant::WorkloadIdentity,
        workload_assertion: assertion,
        client_id: client_id.map(str::to_owned),
        ..OAuthOptions::default()
    }
}

/// SEP-1933: the workload's platform-issued JWT is the grant: one token
/// request, no browser, no registration, no secret.
#[test]
fn workload_identity_presents_the_platform_jwt_as_a_jwt_bearer_grant() {
    let s = start("default");
    let issuer = format!("http://127.0.0.1:{}", s.port);
    let jwt = workload_token(&s, &issuer, 300);
    let c = connect(&s, workload(Some(jwt.clone()), None)).unwrap();
    let who = text(c.call_tool("whoami", json!({})).unwrap());
    assert_eq!(who, "workload:workload-1 mcp:read");
    let r = s.received();
    let tokens: Vec<&Value> = r.iter().filter(|m| m["path"] == "/token").collect();
    assert_eq!(tokens.len(), 1);
    let f = &tokens[0]["form"];
    assert_eq!(
        f["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(f["assertion"], jwt.as_str());
    assert_eq!(f["resource"], s.url());
    assert!(f.get("client_id").is_none(), "{f}");
    assert_eq!(requested(&s, "/authorize") + requested(&s, "/register"), 0);
    // With a client id, it is sent (client authentication "none").
    let jwt = workload_token(&s, &issuer, 300);
    let c = connect(&s, workload(Some(jwt), Some("pre-workload"))).unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("pre-workload "));
}

/// A refused assertion is reported as the server put it, once: no retry,
/// no other grant tried.
#[test]
fn a_refused_workload_assertion_is_reported_not_retried() {
    for (aud, exp, want) in [
        ("https://wrong.example", 300, "wrong audience"),
        ("", -60, "expired"),
    ] {
        let s = start("default");
        let aud = if aud.is_empty() {
            format!("http://127.0.0.1:{}", s.port)
        } else {
            aud.to_owned()
        };
        let jwt = workload_token(&s, &aud, exp);
        match connect(&s, workload(Some(jwt), None)) {
            Err(McpError::Auth { message, .. }) => {
                assert!(
                    message.contains("invalid_grant") && message.contains(want),
                    "{message}"
                )
            }
            other => panic!("expected an Auth error, got {other:?}"),
        }
        assert_eq!(requested(&s, "/token"), 1, "{want}: retried");
        assert_eq!(requested(&s, "/authorize") + requested(&s, "/register"), 0);
    }
    let s = start("default");
    match connect(&s, workload(None, None)) {
        Err(McpError::Auth { message, .. }) => {
            assert!(
                message.contains("OAuthOptions::workload_assertion"),
                "{message}"
            )
        }
        other => panic!("expected an Auth error, got {other:?}"),
    }
}

fn dpop_state(s: &Server) -> Value {
    let resp = ureq::get(&format!("http://127.0.0.1:{}/_dpop", s.port))
        .call()
        .unwrap();
    serde_json::from_reader(resp.into_body().into_reader()).unwrap()
}

/// RFC 9449: the token is bound to the client's key: asked for with a
/// proof, presented as `DPoP` with a fresh proof on every request, and
/// useless to whoever copies it (the server verifies the ES256 proofs).
#[test]
fn dpop_binds_the_token_to_the_clients_key() {
    let s = start("dpop");
    let store = Arc::new(MemoryTokenStore::default());
    let c = connect(
        &s,
        OAuthOptions {
            dpop: true,
            token_store: store.clone(),
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    for _ in 0..3 {
        assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("dyn-"));
    }
    let r = s.received();
    let reg = r.iter().find(|m| m["path"] == "/register").unwrap();
    assert_eq!(reg["body"]["dpop_bound_access_tokens"], true);
    let authz = r.iter().find(|m| m["path"] == "/authorize").unwrap();
    assert_eq!(authz["query"]["dpop_jkt"].as_str().unwrap().len(), 43);
    let token = r.iter().find(|m| m["path"] == "/token").unwrap();
    assert!(token["headers"]["dpop"].is_string());
    let presented: Vec<&Value> = r
        .iter()
        .filter(|m| m["path"] == "/mcp" && m["headers"]["authorization"].is_string())
        .collect();
    assert!(presented.len() >= 4, "{}", presented.len());
    let posts = presented.iter().filter(|m| m["method"] == "POST").count();
    for m in &presented {
        let a = m["headers"]["authorization"].as_str().unwrap();
        assert!(a.starts_with("DPoP at-"), "{a}");
        let proof = m["headers"]["dpop"].as_str().expect("a proof");
        let claims = proof.split('.').nth(1).unwrap();
        let claims: Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["htm"], m["method"], "{claims}");
        assert_eq!(claims["htu"], s.url());
    }
    // Every proof the server accepted was new (it refuses replays).
    let jtis = dpop_state(&s)["jtis"].as_array().unwrap().clone();
    assert_eq!(jtis.len(), posts);
    let mut unique = jtis.clone();
    unique.sort_by_key(|v| v.to_string());
    unique.dedup();
    assert_eq!(unique.len(), jtis.len());

    // The copied token alone gets nowhere: not as Bearer, not with a
    // proof lifted from an earlier request.
    let at = store.load("secured").unwrap().tokens.access_token;
    let lifted = presented[0]["headers"]["dpop"].as_str().unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
    for (auth, proof) in [
        (format!("Bearer {at}"), None),
        (format!("DPoP {at}"), None),
        (format!("DPoP {at}"), Some(lifted)),
    ] {
        let mut rb = ureq::post(&s.url())
            .config()
            .http_status_as_error(false)
            .build()
            .header("Content-Type", "application/json")
            .header("Authorization", &auth);
        if let Some(p) = &proof {
            rb = rb.header("DPoP", p);
        }
        let resp = rb.send(body.as_bytes()).unwrap();
        assert_eq!(resp.status(), 401, "{auth} with proof {}", proof.is_some());
    }
}

/// RFC 9449 §8 and §9: a server that wants a nonce gets the request again
/// with it, at the token endpoint and at the resource.
#[test]
fn dpop_nonces_are_honoured_at_both_servers() {
    let s = start("dpop_nonce");
    let c = connect(
        &s,
        OAuthOptions {
            dpop: true,
            ..OAuthOptions::default()
        },
    )
    .unwrap();
    // Every success rotates the resource's nonce: the next proof carries
    // the new one at once, no 401 needed.
    for _ in 0..3 {
        assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("dyn-"));
    }
    let st = dpop_state(&s);
    assert_eq!(st["as_nonce_challenges"], 1, "{st}");
    assert_eq!(
        st["rs_nonce_challenges"], 1,
        "{st}: a nonce rotated on a success was not taken up"
    );
    assert_eq!(requested(&s, "/token"), 2, "one challenge, one retry");
    assert_eq!(requested(&s, "/authorize"), 1);
}

/// The 2025-03-26 fallback (no protected resource metadata): metadata at
/// the server's origin may declare an issuer under a path of that origin,
/// as servers of that revision do, but not a foreign one.
#[test]
fn legacy_metadata_may_name_a_path_of_the_origin_but_no_other_server() {
    let s = start("legacy_subpath");
    let c = connect(&s, OAuthOptions::default()).unwrap();
    assert!(text(c.call_tool("whoami", json!({})).unwrap()).starts_with("dyn-"));
    let s = start("legacy_mixup");
    match refusal(connect(&s, OAuthOptions::default()), "legacy mixup") {
        AuthRefusal::MetadataIssuerMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected, format!("http://127.0.0.1:{}", s.port));
            assert_eq!(found.as_deref(), Some("https://attacker.example"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(requested(&s, "/register") + requested(&s, "/authorize"), 0);
}
