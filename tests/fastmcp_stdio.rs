//! Interop with a server built on the official Python SDK (FastMCP), over
//! stdio: a second, independent implementation of the protocol.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Map};
use skald_mcp::{
    CallOptions, ElicitationRequest, ElicitationResponse, Era, EraPreference, LogLevel, LogTag,
    McpCallResult, McpError, McpMedia, McpServer, McpServerClient, McpServerConfig,
};

/// The eras every interop test runs in: auto (the SDK's servers are
/// dual-era, so auto picks the modern one) and forced legacy and modern.
const ERAS: [(EraPreference, Era); 3] = [
    (EraPreference::Auto, Era::Modern),
    (EraPreference::Modern, Era::Modern),
    (EraPreference::Legacy, Era::Legacy),
];

fn fastmcp(opts: skald_mcp::ClientOptions) -> McpServer {
    let cfg = McpServerConfig::stdio(
        "fastmcp",
        "python3",
        [repo_path("tests/servers/fastmcp_server.py")],
    );
    McpServer::connect(&cfg, opts).expect("FastMCP server starts")
}

#[test]
fn tools_and_results() {
    if !python_sdk_available() {
        return;
    }
    for (pref, era) in ERAS {
        tools_and_results_in(pref, era);
    }
}

fn tools_and_results_in(pref: EraPreference, era: Era) {
    let s = fastmcp(test_options().era(pref));
    assert_eq!(s.initialize().unwrap().era, era, "{pref:?}");
    assert_eq!(s.server_info().unwrap().name, "fastmcp-test");
    let tools = s.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for want in [
        "echo",
        "add",
        "image",
        "progress",
        "log",
        "elicit_name",
        "fail",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(tools
        .iter()
        .find(|t| t.name == "add")
        .unwrap()
        .output_schema
        .is_some());
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "sdk"})).unwrap()),
        "sdk"
    );
    assert_eq!(
        structured(s.call_tool("add", json!({"a": 2, "b": 3})).unwrap()),
        json!({"sum": 5})
    );
    let McpCallResult::Media { items, .. } = s.call_tool("image", json!({})).unwrap() else {
        panic!()
    };
    assert!(
        matches!(&items[0], McpMedia::Image { mime_type, data } if mime_type == "image/png" && data.starts_with(b"\x89PNG"))
    );
    match s.call_tool("fail", json!({})) {
        Err(McpError::Tool { message, .. }) => {
            assert!(message.contains("something went wrong"), "{message}")
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
    s.close().unwrap();
}

#[test]
fn progress_and_logs() {
    if !python_sdk_available() {
        return;
    }
    for (pref, era) in ERAS {
        progress_and_logs_in(pref, era);
    }
}

/// Progress in both eras; log messages too (in the modern era the server
/// sends them only because every request asks, with `_meta` `logLevel`).
fn progress_and_logs_in(pref: EraPreference, era: Era) {
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = fastmcp(test_options().logs(ltx).era(pref));
    assert_eq!(s.initialize().unwrap().era, era);
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = s
        .call_tool_with(
            "progress",
            json!({"steps": 3}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "progressed 3");
    let p: Vec<_> = prx.try_iter().collect();
    assert_eq!(
        p.iter().map(|p| p.progress).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0]
    );
    assert_eq!(p[0].message.as_deref(), Some("step 1"));
    s.call_tool("log", json!({"message": "careful"})).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let l = lrx.recv_deadline(deadline).expect("the warning arrives");
        if l.tag == LogTag::Level(LogLevel::Warning) && l.text.contains("careful") {
            break;
        }
    }
}

/// The SDK server's tool asks with a server-to-client request (its
/// `ctx.elicit`), which only the legacy era has: the client is pinned to it.
#[test]
fn elicitation_through_the_sdk() {
    if !python_sdk_available() {
        return;
    }
    let s = fastmcp(
        test_options()
            .era(EraPreference::Legacy)
            .elicitation_handler(|req: &ElicitationRequest| {
                assert_eq!(req.message, "What is your name?");
                let f = &req.form.fields()[0];
                assert_eq!(
                    (f.name.as_str(), f.required, f.secret),
                    ("name", true, false)
                );
                let mut m = Map::new();
                m.insert("name".into(), json!("Ada"));
                ElicitationResponse::Accept(m)
            }),
    );
    assert_eq!(
        text(s.call_tool("elicit_name", json!({})).unwrap()),
        "hello Ada"
    );
    let s = fastmcp(
        test_options()
            .era(EraPreference::Legacy)
            .elicitation_handler(|_: &ElicitationRequest| ElicitationResponse::Decline),
    );
    assert_eq!(
        text(s.call_tool("elicit_name", json!({})).unwrap()),
        "declined"
    );
}

#[test]
fn cancellation_through_the_sdk() {
    if !python_sdk_available() {
        return;
    }
    // Modern: notifications/cancelled for the call; legacy: the same.
    for (pref, _) in ERAS {
        cancellation_in(pref);
    }
}

fn cancellation_in(pref: EraPreference) {
    let s = fastmcp(test_options().era(pref));
    let opts = CallOptions::new().timeout(Duration::from_millis(500));
    assert!(matches!(
        s.call_tool_with("slow", json!({"seconds": 30}), &opts),
        Err(McpError::CallTimeout { .. })
    ));
    // The SDK honoured the cancellation: the connection keeps working.
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "next"})).unwrap()),
        "next"
    );
}
