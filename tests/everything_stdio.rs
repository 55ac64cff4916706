//! Interop with the official MCP reference server
//! `@modelcontextprotocol/server-everything` over stdio: every tool and
//! result kind, progress, logs, notifications, resources, prompts,
//! completion, elicitation, sampling, roots and tasks.
//!
//! Skipped (with a message) when `tests/everything/node_modules` is missing,
//! failed in CI; `bash tests/setup.sh` installs it.

mod everything_support;

use everything_support::*;
use skald_mcp::{McpServer, McpServerClient};

/// Connects with every handler installed; `None` (skip) without the server.
fn connect(test: &str) -> Option<(McpServer, Wired, Watchdog)> {
    if !available() {
        return None;
    }
    let dog = watchdog(test, None);
    let w = wired();
    let s = McpServer::connect(&stdio_config(test), w.opts.clone()).expect("the server starts");
    check_tool_list(&s, &w);
    Some((s, w, dog))
}

#[test]
fn handshake_and_tool_list() {
    let Some((s, _w, _dog)) = connect("every-hello") else {
        return;
    };
    check_handshake(&s);
    s.close().unwrap();
    assert!(!s.is_connected());
}

#[test]
fn plain_tools_and_errors() {
    let Some((s, w, _dog)) = connect("every-tools") else {
        return;
    };
    check_plain_tools(&s, &w, "stdio-mark");
    s.close().unwrap();
}

#[test]
fn long_running_progress() {
    let Some((s, _w, _dog)) = connect("every-progress") else {
        return;
    };
    check_progress(&s);
    s.close().unwrap();
}

#[test]
fn simulated_logging() {
    let Some((s, w, _dog)) = connect("every-logging") else {
        return;
    };
    check_logging(&s, &w);
    s.close().unwrap();
}

#[test]
fn resources_and_subscriptions() {
    let Some((s, w, _dog)) = connect("every-resources") else {
        return;
    };
    check_resources(&s, &w);
    s.close().unwrap();
}

#[test]
fn prompts_and_completion() {
    let Some((s, _w, _dog)) = connect("every-prompts") else {
        return;
    };
    check_prompts(&s);
    check_completion(&s);
    s.close().unwrap();
}

#[test]
fn elicitation_form_and_url() {
    let Some((s, w, _dog)) = connect("every-elicit") else {
        return;
    };
    check_elicitation(&s, &w);
    check_url_elicitation(&s, &w);
    s.close().unwrap();
}

#[test]
fn sampling_and_roots() {
    let Some((s, w, _dog)) = connect("every-sampling") else {
        return;
    };
    check_sampling(&s, &w);
    check_roots(&s, &w);
    s.close().unwrap();
}

#[test]
fn task_mode_tool() {
    let Some((s, w, _dog)) = connect("every-task") else {
        return;
    };
    check_task(&s);
    check_task_with_input(&s, &w);
    s.close().unwrap();
}
