//! The HTTP client against the official Python SDK's FastMCP server over
//! Streamable HTTP in the legacy era (SSE and JSON responses, progress and
//! logs mid-call, elicitation over the stream, the GET stream, resumption,
//! session expiry): the client is pinned to the legacy era, whose transport
//! these are. `http_modern.rs` has the same server in the modern era.

mod http_support;

use std::time::{Duration, Instant};

use http_support::*;
use serde_json::{json, Value};
use skald_mcp::{
    CallOptions, CancelToken, ElicitationRequest, ElicitationResponse, LogLevel, LogTag,
    McpCallResult, McpError, McpHttpServer, McpServerClient, McpServerConfig,
};

fn connect(server: &Server, name: &str, opts: skald_mcp::ClientOptions) -> McpHttpServer {
    let opts = opts.era(skald_mcp::EraPreference::Legacy);
    McpHttpServer::connect(&McpServerConfig::http(name, server.url()), opts).expect("connects")
}

fn text(r: McpCallResult) -> String {
    match r {
        McpCallResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

fn headers_seen(c: &McpHttpServer) -> Value {
    serde_json::from_str(&text(c.call_tool("headers", json!({})).unwrap())).unwrap()
}

#[test]
fn sse_responses_session_and_headers() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-sse", test_options());
    let info = c.initialize().unwrap();
    assert_eq!(info.protocol_version, "2025-11-25");
    assert_eq!(info.server_info.name, "fastmcp-http-test");
    let sid = c.session_id().expect("the SDK assigns a session id");
    let names: Vec<String> = c
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for n in [
        "echo",
        "progress",
        "log",
        "elicit_name",
        "headers",
        "standalone",
        "drop_stream",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "hi ✓"})).unwrap()),
        "hi ✓"
    );
    // A reply past `LARGE_STRING_MIN` (its strings taken out before
    // parsing) comes back byte for byte over an SSE response.
    let big = large_text();
    assert!(text(c.call_tool("echo", json!({ "text": big })).unwrap()) == big);
    let h = headers_seen(&c);
    assert_eq!(h["mcp-session-id"], sid.as_str());
    assert_eq!(h["mcp-protocol-version"], "2025-11-25");
    assert_eq!(h["accept"], "application/json, text/event-stream");
    assert_eq!(h["content-type"], "application/json");
    assert_eq!(h["authorization"], Value::Null);
    c.ping().unwrap();
    c.close().unwrap();
    assert!(!c.is_connected());
    assert!(matches!(
        c.call_tool("echo", json!({"text": "x"})),
        Err(McpError::Disconnected { .. })
    ));
}

/// 150 000 characters, multibyte ones among them: a reply past
/// `LARGE_STRING_MIN`.
fn large_text() -> String {
    (0..150_000)
        .map(|k| ['a', 'é', '€', '😀', ' '][k % 5])
        .collect()
}

#[test]
fn json_responses() {
    let Some(server) = Server::fastmcp(&["--json-response"]) else {
        return;
    };
    let c = connect(&server, "fm-json", test_options());
    assert!(c.session_id().is_some());
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "plain json"})).unwrap()),
        "plain json"
    );
    // And over a JSON response.
    let big = large_text();
    assert!(text(c.call_tool("echo", json!({ "text": big })).unwrap()) == big);
    // In JSON mode the SDK drops messages tied to the request: the call still completes.
    assert_eq!(
        text(c.call_tool("progress", json!({"steps": 2})).unwrap()),
        "progressed 2"
    );
    let h = headers_seen(&c);
    assert_eq!(h["mcp-session-id"], c.session_id().unwrap().as_str());
    assert_eq!(h["mcp-protocol-version"], "2025-11-25");
    c.close().unwrap();
}

#[test]
fn stateless_server_has_no_session() {
    let Some(server) = Server::fastmcp(&["--stateless", "--json-response"]) else {
        return;
    };
    let c = connect(&server, "fm-stateless", test_options());
    assert_eq!(c.session_id(), None);
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "s"})).unwrap()),
        "s"
    );
    let h = headers_seen(&c);
    assert_eq!(h["mcp-session-id"], Value::Null);
    assert_eq!(h["mcp-protocol-version"], "2025-11-25");
    c.close().unwrap();
}

#[test]
fn progress_and_log_notifications_arrive_mid_call() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "fm-progress", opts);
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "progress",
            json!({"steps": 5}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "progressed 5");
    let got: Vec<_> = prx.try_iter().collect();
    assert_eq!(got.len(), 5, "{got:?}");
    for (i, p) in got.iter().enumerate() {
        assert_eq!(p.progress, (i + 1) as f64);
        assert_eq!(p.total, Some(5.0));
        assert_eq!(
            p.message.as_deref(),
            Some(format!("step {}", i + 1).as_str())
        );
    }
    assert_eq!(
        text(
            c.call_tool("log", json!({"message": "careful now"}))
                .unwrap()
        ),
        "logged"
    );
    let info = wait_log(&logs, "careful now");
    assert_eq!(info.tag, LogTag::Level(LogLevel::Info));
    let warning = wait_log(&logs, "careful now");
    assert_eq!(warning.tag, LogTag::Level(LogLevel::Warning));
    assert_eq!(warning.server, "fm-progress");
    c.close().unwrap();
}

#[test]
fn elicitation_over_the_response_stream() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    // The server waits for the answer before it sends the response on the
    // same stream: a client that buffered the whole body would deadlock.
    let opts = test_options().elicitation_handler(|req: &ElicitationRequest| {
        assert_eq!(req.message, "What is your name?");
        let mut m = serde_json::Map::new();
        m.insert("name".into(), json!("Ada"));
        ElicitationResponse::Accept(m)
    });
    let c = connect(&server, "fm-elicit", opts);
    assert_eq!(
        text(c.call_tool("elicit_name", json!({})).unwrap()),
        "hello Ada"
    );
    c.close().unwrap();

    let decline =
        test_options().elicitation_handler(|_: &ElicitationRequest| ElicitationResponse::Decline);
    let c = connect(&server, "fm-decline", decline);
    assert_eq!(
        text(c.call_tool("elicit_name", json!({})).unwrap()),
        "declined"
    );
    c.close().unwrap();
}

#[test]
fn get_stream_carries_notifications_logs_and_pings() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let (opts, notes, logs) = wired_options();
    let c = connect(&server, "fm-get", opts);
    wait_log(&logs, "listening for server messages on the GET stream");
    // The tool pings the client on the GET stream until the client answers
    // with a POST, then sends a log record and a notification there.
    let r = text(c.call_tool("standalone", json!({"nonce": "n-42"})).unwrap());
    assert!(r.starts_with("pinged after"), "{r}");
    let n = wait_for(&notes, Duration::from_secs(20), "resources/updated", |n| {
        n.method == "notifications/resources/updated"
    });
    assert_eq!(n.params["uri"], "test://n-42");
    assert_eq!(n.server, "fm-get");
    let line = wait_log(&logs, "standalone n-42");
    assert_eq!(line.tag, LogTag::Level(LogLevel::Info));
    c.close().unwrap();
}

#[test]
fn dropped_stream_is_resumed_with_last_event_id() {
    let Some(server) = Server::fastmcp(&["--event-store", "--retry-ms", "100"]) else {
        return;
    };
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "fm-resume", opts);
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "drop_stream",
            json!({"steps": 3}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "survived the drop");
    let got: Vec<f64> = prx.try_iter().map(|p| p.progress).collect();
    assert_eq!(got, [1.0, 2.0, 3.0]);
    wait_log(&logs, "resuming after event");
    // The SDK's event store was asked to replay after an event id: the
    // client sent Last-Event-ID.
    let replays: Vec<String> =
        serde_json::from_str(&text(c.call_tool("resumes", json!({})).unwrap())).unwrap();
    assert!(
        replays.iter().any(|id| id.starts_with("ev-")),
        "{replays:?}"
    );
    c.close().unwrap();
}

#[test]
fn cancellation_and_timeouts_leave_the_connection_usable() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-cancel", test_options());
    let token = CancelToken::new();
    token.cancel_with("user pressed stop");
    let started = Instant::now();
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Cancelled { reason, .. } if reason == "user pressed stop"),
        "{e:?}"
    );
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(matches!(e, McpError::CallTimeout { .. }), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        text(c.call_tool("slow", json!({"seconds": 0.1})).unwrap()),
        "done after 0.1s"
    );
    c.close().unwrap();
}

#[test]
fn expired_session_is_reinitialized_transparently() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "fm-expire", opts);
    let old = c.session_id().unwrap();
    // End the session behind the client's back.
    let resp = ureq::delete(server.url())
        .header("Mcp-Session-Id", old.as_str())
        .header("MCP-Protocol-Version", "2025-11-25")
        .call()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // The next request gets 404, re-initializes and is retried.
    let h = headers_seen(&c);
    let new = c.session_id().unwrap();
    assert_ne!(new, old);
    assert_eq!(h["mcp-session-id"], new.as_str());
    wait_log(&logs, "the session expired (HTTP 404); re-initializing");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "again"})).unwrap()),
        "again"
    );
    c.close().unwrap();
}

#[test]
fn concurrent_calls_each_get_their_own_progress_and_result() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = std::sync::Arc::new(connect(&server, "fm-many", test_options()));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let c = std::sync::Arc::clone(&c);
            std::thread::spawn(move || {
                let (ptx, prx) = crossbeam_channel::unbounded();
                let steps = 2 + i % 3;
                let r = c
                    .call_tool_with(
                        "progress",
                        json!({"steps": steps}),
                        &CallOptions::new().progress_channel(ptx),
                    )
                    .unwrap();
                assert_eq!(text(r), format!("progressed {steps}"));
                let got: Vec<_> = prx.try_iter().collect();
                assert_eq!(got.len(), steps, "{got:?}");
                assert!(got.iter().all(|p| p.total == Some(steps as f64)));
                let echo = text(
                    c.call_tool("echo", json!({"text": format!("t{i}")}))
                        .unwrap(),
                );
                assert_eq!(echo, format!("t{i}"));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(c.pending_requests(), 0);
    c.close().unwrap();
}
