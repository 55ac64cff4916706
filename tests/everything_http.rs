//! Interop with the official MCP reference server
//! `@modelcontextprotocol/server-everything` over Streamable HTTP: every tool and
//! result kind, progress, logs, notifications, resources, prompts,
//! completion, elicitation, sampling, roots and tasks.
//!
//! Skipped (with a message) when `tests/everything/node_modules` is missing,
//! failed in CI; `bash tests/setup.sh` installs it.

mod everything_support;

use everything_support::*;
use skald_mcp::{McpHttpServer, McpServerClient, McpServerConfig};

/// Starts the server on a free port and connects with every handler
/// installed; `None` (skip) without the server. The guard kills the server
/// when dropped, also on panic; the client is dropped first.
fn connect(test: &str) -> Option<(HttpServer, Wired, McpHttpServer)> {
    if !available() {
        return None;
    }
    let server = HttpServer::start(test);
    let w = wired();
    let c = McpHttpServer::connect(&McpServerConfig::http(test, server.url()), w.opts.clone())
        .unwrap_or_else(|e| panic!("connects: {e}; server output:\n{}", server.output()));
    assert!(c.session_id().is_some(), "the server assigns a session");
    check_tool_list(&c, &w);
    Some((server, w, c))
}

#[test]
fn handshake_and_tool_list() {
    let Some((server, _w, s)) = connect("every-http-hello") else {
        return;
    };
    check_handshake(&s);
    let sid = s.session_id().unwrap();
    s.close().unwrap();
    assert!(!s.is_connected());
    // DELETE ended the session on the server.
    server.wait_output(&format!("session termination request for session {sid}"));
}

#[test]
fn plain_tools_and_errors() {
    let Some((_server, w, s)) = connect("every-http-tools") else {
        return;
    };
    check_plain_tools(&s, &w, "http-mark");
    s.close().unwrap();
}

#[test]
fn long_running_progress() {
    let Some((_server, _w, s)) = connect("every-http-progress") else {
        return;
    };
    check_progress(&s);
    s.close().unwrap();
}

#[test]
fn simulated_logging() {
    let Some((_server, w, s)) = connect("every-http-logging") else {
        return;
    };
    check_logging(&s, &w);
    s.close().unwrap();
}

#[test]
fn resources_and_subscriptions() {
    let Some((_server, w, s)) = connect("every-http-resources") else {
        return;
    };
    check_resources(&s, &w);
    s.close().unwrap();
}

#[test]
fn prompts_and_completion() {
    let Some((_server, _w, s)) = connect("every-http-prompts") else {
        return;
    };
    check_prompts(&s);
    check_completion(&s);
    s.close().unwrap();
}

#[test]
fn elicitation_form_and_url() {
    let Some((_server, w, s)) = connect("every-http-elicit") else {
        return;
    };
    check_elicitation(&s, &w);
    check_url_elicitation(&s, &w);
    s.close().unwrap();
}

#[test]
fn sampling_and_roots() {
    let Some((_server, w, s)) = connect("every-http-sampling") else {
        return;
    };
    check_sampling(&s, &w);
    check_roots(&s, &w);
    s.close().unwrap();
}

#[test]
fn task_mode_tool() {
    let Some((_server, w, s)) = connect("every-http-task") else {
        return;
    };
    check_task(&s);
    check_task_with_input(&s, &w);
    s.close().unwrap();
}
