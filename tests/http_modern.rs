//! The HTTP client in the modern era (MCP 2026-07-28) against the official
//! Python SDK's server, which is dual-era by default and can be made
//! modern-only or legacy-only (`--era`): era detection over HTTP, the
//! stateless transport (no session, no GET stream, the version header and
//! `_meta` on every POST, `Mcp-Method`/`Mcp-Name`), progress, logs and
//! cancellation in the modern era.

mod http_support;

use std::time::{Duration, Instant};

use http_support::*;
use serde_json::{json, Value};
use skald_mcp::{
    CallOptions, CancelToken, Era, EraPreference, LogLevel, LogTag, McpCallResult, McpError,
    McpHttpServer, McpServerClient, McpServerConfig,
};

fn connect(server: &Server, name: &str, opts: skald_mcp::ClientOptions) -> McpHttpServer {
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

/// The compatibility matrix over HTTP: a dual-era client against dual-era,
/// modern-only and legacy-only servers, in auto mode and forced.
#[test]
fn era_detection_over_http() {
    if !python_sdk_available() {
        return;
    }
    let cells = [
        ("dual", EraPreference::Auto, Some(Era::Modern)),
        ("dual", EraPreference::Legacy, Some(Era::Legacy)),
        ("dual", EraPreference::Modern, Some(Era::Modern)),
        ("modern", EraPreference::Auto, Some(Era::Modern)),
        ("modern", EraPreference::Legacy, None),
        ("legacy", EraPreference::Auto, Some(Era::Legacy)),
        ("legacy", EraPreference::Modern, None),
    ];
    for (server_era, pref, want) in cells {
        let server = Server::fastmcp(&["--era", server_era]).unwrap();
        let cfg = McpServerConfig::http(format!("era-{server_era}"), server.url());
        let got = McpHttpServer::connect(&cfg, test_options().era(pref));
        match (want, got) {
            (Some(era), Ok(c)) => {
                let info = c.initialize().unwrap();
                assert_eq!(info.era, era, "{server_era} server, {pref:?}");
                let expected = match era {
                    Era::Modern => "2026-07-28",
                    Era::Legacy => "2025-11-25",
                };
                assert_eq!(info.protocol_version, expected);
                assert_eq!(
                    text(c.call_tool("echo", json!({"text": "hi"})).unwrap()),
                    "hi"
                );
                assert_eq!(c.session_id().is_some(), era == Era::Legacy);
                c.close().unwrap();
            }
            (None, Err(e)) => {
                // A forced era the server does not speak is a clear error,
                // never a fallback.
                let shown = e.to_string();
                assert!(!shown.is_empty(), "{server_era} server, {pref:?}: {e:?}");
            }
            (want, got) => panic!("{server_era} server, {pref:?}: wanted {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn stateless_requests_carry_version_method_and_name() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-modern", test_options());
    assert_eq!(c.initialize().unwrap().era, Era::Modern);
    assert_eq!(c.session_id(), None);
    let h = headers_seen(&c);
    assert_eq!(h["mcp-protocol-version"], "2026-07-28");
    assert_eq!(h["mcp-method"], "tools/call");
    assert_eq!(h["mcp-name"], "headers");
    assert_eq!(h["mcp-session-id"], Value::Null);
    assert_eq!(h["accept"], "application/json, text/event-stream");
    // No GET stream in this era.
    assert!(!c.is_listening());
    // ping is server/discover in the modern era (there is no ping).
    c.ping().unwrap();
    c.close().unwrap();
}

/// A tool whose parameter declares `x-mcp-header` gets its value mirrored
/// in an `Mcp-Param-*` header on a 2026-07-28 call once the tools are
/// listed (the declaration is read from the cached list), while the other
/// tools, which declare none, get none.
#[test]
fn declared_parameters_are_mirrored_in_headers() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-mparam", test_options());
    assert_eq!(c.initialize().unwrap().era, Era::Modern);
    assert!(c
        .list_tools()
        .unwrap()
        .iter()
        .any(|t| t.name == "param_header"));
    let got: Value = serde_json::from_str(&text(
        c.call_tool("param_header", json!({"region": "us-west1"}))
            .unwrap(),
    ))
    .unwrap();
    assert_eq!(got["region"], "us-west1");
    assert_eq!(got["mcp-param-region"], "us-west1");
    // A tool without declarations: no Mcp-Param header, the call goes.
    assert_eq!(headers_seen(&c)["mcp-name"], "headers");
    c.close().unwrap();
}

/// A header mismatch on a call (the tool's `x-mcp-header` declarations
/// may have changed since it was listed) lists the tools again and sends
/// the call once more; a second mismatch is the caller's typed error.
#[test]
fn a_header_mismatch_is_retried_once() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-mismatch", test_options());
    assert_eq!(c.initialize().unwrap().era, Era::Modern);
    c.list_tools().unwrap();
    let once = c.call_tool("mismatch", json!({"key": "once", "times": 1}));
    assert_eq!(text(once.unwrap()), "attempt 2");
    match c.call_tool("mismatch", json!({"key": "twice", "times": 2})) {
        Err(McpError::HeaderMismatch {
            method, message, ..
        }) => {
            assert_eq!(method, "tools/call");
            assert!(message.contains("attempt 2"), "{message}");
        }
        other => panic!("expected HeaderMismatch after one retry, got {other:?}"),
    }
    // Sent once more, not again and again.
    let third = c.call_tool("mismatch", json!({"key": "twice", "times": 2}));
    assert_eq!(text(third.unwrap()), "attempt 3");
    c.close().unwrap();
}

#[test]
fn progress_and_logs_in_the_modern_era() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "fm-mprogress", opts);
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "progress",
            json!({"steps": 4}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "progressed 4");
    let got: Vec<f64> = prx.try_iter().map(|p| p.progress).collect();
    assert_eq!(got, [1.0, 2.0, 3.0, 4.0]);
    // The server logs only at the level the request's `_meta` asks for
    // (debug by default): both lines arrive.
    assert_eq!(
        text(
            c.call_tool("log", json!({"message": "modern careful"}))
                .unwrap()
        ),
        "logged"
    );
    assert_eq!(
        wait_log(&logs, "modern careful").tag,
        LogTag::Level(LogLevel::Info)
    );
    assert_eq!(
        wait_log(&logs, "modern careful").tag,
        LogTag::Level(LogLevel::Warning)
    );
    // Raising the level (no logging/setLevel in this era: it goes into
    // `_meta`) filters the info line out.
    c.set_logging_level(LogLevel::Warning).unwrap();
    c.call_tool("log", json!({"message": "only the warning"}))
        .unwrap();
    let l = wait_log(&logs, "only the warning");
    assert_eq!(l.tag, LogTag::Level(LogLevel::Warning));
    c.close().unwrap();
}

#[test]
fn cancellation_and_timeouts_in_the_modern_era() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = connect(&server, "fm-mcancel", test_options());
    let token = CancelToken::new();
    token.cancel_with("stop");
    let started = Instant::now();
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    assert!(matches!(&e, McpError::Cancelled { .. }), "{e:?}");
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
fn concurrent_modern_calls_each_get_their_result() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let c = std::sync::Arc::new(connect(&server, "fm-mmany", test_options()));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let c = std::sync::Arc::clone(&c);
            std::thread::spawn(move || {
                text(
                    c.call_tool("echo", json!({"text": format!("n{i}")}))
                        .unwrap(),
                )
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), format!("n{i}"));
    }
}

/// list_changed arrives on the client's `subscriptions/listen` stream (a
/// long-lived POST): the tool list is refreshed, and the notification is
/// tagged with the subscription id.
#[test]
fn list_changed_over_an_http_listen_stream() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let (opts, notes, _logs) = wired_options();
    let c = connect(&server, "fm-listen", opts);
    assert_eq!(c.initialize().unwrap().era, Era::Modern);
    let before = c.list_tools().unwrap().len();
    assert_eq!(
        text(c.call_tool("add_tool", json!({"name": "late"})).unwrap()),
        "added late"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = notes.recv_deadline(deadline).expect("list_changed arrives");
        if n.method == "notifications/tools/list_changed" {
            assert!(
                n.params["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number(),
                "{n:?}"
            );
            break;
        }
    }
    let after = c.list_tools().unwrap();
    assert_eq!(after.len(), before + 1);
    assert!(after.iter().any(|t| t.name == "late"));
    c.close().unwrap();
}

/// The official SDK's resolvers (`Resolve(Elicit…)`, `Resolve(ListRoots)`)
/// reach the same handlers in both eras: a multi round-trip request (its
/// `requestState` sealed by the SDK and echoed untouched) in the modern
/// era, server-to-client requests in the legacy one.
#[test]
fn sdk_resolvers_reach_the_same_handlers_in_both_eras() {
    let Some(server) = Server::fastmcp(&[]) else {
        return;
    };
    let opts = || {
        test_options()
            .elicitation_handler(|req: &skald_mcp::ElicitationRequest| {
                assert_eq!(req.message, "What is your name?");
                let mut m = serde_json::Map::new();
                m.insert("name".into(), json!("Ada"));
                skald_mcp::ElicitationResponse::Accept(m)
            })
            .roots_provider(vec![skald_mcp::Root::new("file:///work", "work")])
    };
    for era in [EraPreference::Modern, EraPreference::Legacy] {
        let c = connect(&server, "fm-resolve", opts().era(era));
        assert_eq!(
            text(c.call_tool("resolve_name", json!({})).unwrap()),
            "hello Ada; roots file:///work",
            "{era:?}"
        );
        c.close().unwrap();
    }
}
