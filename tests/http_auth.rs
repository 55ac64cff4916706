//! The bearer token: `api_key` with `${VAR}` interpolation is sent as
//! `Authorization: Bearer <key>` on every request (initialize, later POSTs,
//! the GET stream, DELETE), to the hostile server and to FastMCP.
//!
//! One test in its own binary: it sets an environment variable, which must
//! not race with other threads reading the environment.

mod http_support;

use http_support::*;
use serde_json::{json, Value};
use skald_mcp::{McpCallResult, McpHttpServer, McpServerClient, McpServerConfig};

#[test]
fn bearer_token_from_an_environment_variable() {
    std::env::set_var("SKALD_HTTP_TEST_TOKEN", "s3cr3t-token");
    let cfg = |url: String| {
        McpServerConfig::http("auth", url).with_api_key("tok-${SKALD_HTTP_TEST_TOKEN}")
    };

    let hostile = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = McpHttpServer::connect(&cfg(hostile.url()), opts).unwrap();
    wait_log(&logs, "listening for server messages on the GET stream");
    c.call_tool("echo", json!({"text": "x"})).unwrap();
    c.close().unwrap();
    let all: Vec<Value> = hostile
        .received()
        .into_iter()
        .filter(|r| r["path"] == "/mcp")
        .collect();
    assert!(all.len() >= 5, "{all:?}");
    for verb in ["POST", "GET", "DELETE"] {
        assert!(all.iter().any(|r| r["verb"] == verb), "no {verb}");
    }
    for r in &all {
        assert_eq!(
            r["headers"]["authorization"], "Bearer tok-s3cr3t-token",
            "{r}"
        );
    }
    // The key never appears in log lines.
    assert!(logs.try_iter().all(|l| !l.text.contains("s3cr3t")));

    let Some(fm) = Server::fastmcp(&[]) else {
        return;
    };
    let c = McpHttpServer::connect(&cfg(fm.url()), test_options()).unwrap();
    let McpCallResult::Text(t) = c.call_tool("headers", json!({})).unwrap() else {
        panic!("text")
    };
    let h: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(h["authorization"], "Bearer tok-s3cr3t-token");
    c.close().unwrap();

    // An unset variable is a configuration error naming it, before any request.
    let bad = McpServerConfig::http("auth", hostile.url())
        .with_api_key("${SKALD_HTTP_TEST_SURELY_UNSET}");
    let e = McpHttpServer::connect(&bad, test_options()).unwrap_err();
    assert!(
        e.to_string().contains("SKALD_HTTP_TEST_SURELY_UNSET"),
        "{e}"
    );
}
