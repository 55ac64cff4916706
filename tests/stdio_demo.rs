//! The stdio client against the bundled demo server: handshake, pagination,
//! every result kind, notifications, logs, progress and concurrency.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use skald_mcp::{
    CallOptions, LogLevel, LogTag, McpCallResult, McpError, McpMedia, McpServerClient,
    ResourceData, TaskSupport,
};

#[test]
fn handshake_and_server_info() {
    let s = demo(test_options());
    let info = s.initialize().unwrap();
    assert_eq!(info.protocol_version, "2025-11-25");
    assert_eq!(info.server_info.name, "demo");
    assert_eq!(info.server_info.version, "1.0.0");
    assert!(info.capabilities.has("tools"));
    assert_eq!(s.protocol_version().as_deref(), Some("2025-11-25"));
    assert_eq!(s.server_info().unwrap().name, "demo");
    assert!(s.server_capabilities().unwrap().has("logging"));
    s.ping().unwrap();
    // The handshake is done once: the server saw exactly one initialize.
    let msgs = received(&s);
    let inits = msgs.iter().filter(|m| m["method"] == "initialize").count();
    assert_eq!(inits, 1);
    let init = msgs.iter().find(|m| m["method"] == "initialize").unwrap();
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "skald-mcp");
    // No handler installed: elicitation must not be advertised.
    assert_eq!(
        init["params"]["capabilities"],
        json!({"experimental": {"tasks": {}}})
    );
    assert!(msgs
        .iter()
        .any(|m| m["method"] == "notifications/initialized"));
    s.close().unwrap();
}

#[test]
fn lists_every_page() {
    let s = demo(test_options());
    let tools = s.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "image",
            "audio",
            "resource_link",
            "embedded_resource",
            "fail",
            "slow",
            "notify",
            "log",
            "stderr",
            "progress",
            "received",
            "pid",
            "ping_client",
            "bad_structured",
            "register_tool",
            "modern_error",
            "confirm",
            "mrtr",
            "task_job"
        ]
    );
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(add.output_schema.is_some());
    assert_eq!(add.task_support, TaskSupport::Forbidden);
    assert_eq!(add.input_schema_value()["type"], "object");
    // 21 tools, 4 a page: six tools/list requests, five with a cursor.
    let msgs = received(&s);
    let lists: Vec<_> = msgs
        .iter()
        .filter(|m| m["method"] == "tools/list")
        .collect();
    assert_eq!(lists.len(), 6);
    assert_eq!(
        lists
            .iter()
            .filter(|m| m["params"]["cursor"].is_string())
            .count(),
        5
    );
}

#[test]
fn page_cap_stops_a_runaway_cursor() {
    let mut opts = test_options();
    opts.max_tool_pages = 2;
    let s = demo(opts);
    // Two pages of four: the rest is cut, with a warning, not an error.
    assert_eq!(s.list_tools().unwrap().len(), 8);
}

#[test]
fn every_result_kind() {
    let s = demo(test_options());
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "hi ✓"})).unwrap()),
        "hi ✓"
    );
    assert_eq!(
        structured(s.call_tool("add", json!({"a": 2, "b": 3})).unwrap()),
        json!({"sum": 5})
    );

    let McpCallResult::Media {
        text,
        items,
        structured,
    } = s.call_tool("image", json!({})).unwrap()
    else {
        panic!("image is media")
    };
    assert_eq!(text, "a 1x1 red pixel");
    assert_eq!(structured, None);
    let McpMedia::Image { mime_type, data } = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(mime_type, "image/png");
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");

    let McpCallResult::Media { items, .. } = s.call_tool("audio", json!({})).unwrap() else {
        panic!()
    };
    let McpMedia::Audio { mime_type, data } = &items[0] else {
        panic!()
    };
    assert_eq!(
        (mime_type.as_str(), data.len(), &data[..4]),
        ("audio/wav", 52, &b"RIFF"[..])
    );

    let McpCallResult::Media { items, .. } = s.call_tool("resource_link", json!({})).unwrap()
    else {
        panic!()
    };
    assert!(
        matches!(&items[0], McpMedia::ResourceLink { uri, name: Some(n), .. }
        if uri == "file:///demo/readme.txt" && n == "readme.txt")
    );

    let McpCallResult::Media { items, .. } = s.call_tool("embedded_resource", json!({})).unwrap()
    else {
        panic!()
    };
    let McpMedia::Resource {
        uri,
        data: ResourceData::Blob(b),
        ..
    } = &items[0]
    else {
        panic!()
    };
    assert_eq!(uri, "demo://blob/1");
    assert_eq!(*b, (0u8..16).collect::<Vec<_>>());

    match s.call_tool("fail", json!({})) {
        Err(McpError::Tool {
            tool,
            message,
            server,
            ..
        }) => {
            assert_eq!(
                (server.as_str(), tool.as_str(), message.as_str()),
                ("demo", "fail", "something went wrong")
            );
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
    match s.call_tool("no_such_tool", json!({})) {
        Err(McpError::Rpc {
            code,
            message,
            method,
            ..
        }) => {
            assert_eq!(code, -32602);
            assert_eq!(method, "tools/call");
            assert!(message.contains("no_such_tool"));
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    assert!(matches!(
        s.call_tool("echo", json!([1])),
        Err(McpError::InvalidInput { .. })
    ));
}

#[test]
fn notifications_and_logs_reach_their_channels() {
    let (ntx, nrx) = crossbeam_channel::unbounded();
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = demo(test_options().notifications(ntx).logs(ltx));
    s.call_tool(
        "notify",
        json!({"method": "event/new_email", "params": {"subject": "hi"}}),
    )
    .unwrap();
    let n = nrx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (n.server.as_str(), n.method.as_str()),
        ("demo", "event/new_email")
    );
    assert_eq!(n.params, json!({"subject": "hi"}));

    s.call_tool(
        "log",
        json!({"level": "warning", "message": "rate limit approaching"}),
    )
    .unwrap();
    s.call_tool("stderr", json!({"text": "plain stderr line"}))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let (mut saw_level, mut saw_stderr, mut saw_ready, mut saw_connected) =
        (false, false, false, false);
    while !(saw_level && saw_stderr && saw_ready && saw_connected) {
        let line = lrx.recv_deadline(deadline).expect("log lines arrive");
        assert_eq!(line.server, "demo");
        match (&line.tag, line.text.as_str()) {
            (LogTag::Level(LogLevel::Warning), "demo: rate limit approaching") => saw_level = true,
            (LogTag::Stderr, "plain stderr line") => saw_stderr = true,
            (LogTag::Stderr, "demo server ready") => saw_ready = true,
            (LogTag::Lifecycle, t) if t.starts_with("connected") => saw_connected = true,
            _ => {}
        }
    }
    // notifications/message is a log record, never an event.
    assert!(nrx.try_recv().is_err());
}

#[test]
fn progress_arrives_in_order() {
    let s = demo(test_options());
    let (tx, rx) = crossbeam_channel::unbounded();
    let opts = CallOptions::new().progress_channel(tx);
    assert_eq!(
        text(
            s.call_tool_with("progress", json!({"steps": 5}), &opts)
                .unwrap()
        ),
        "progressed 5"
    );
    let got: Vec<_> = rx.try_iter().collect();
    assert_eq!(got.len(), 5);
    for (i, p) in got.iter().enumerate() {
        assert_eq!(p.progress, (i + 1) as f64);
        assert_eq!(p.total, Some(5.0));
        assert_eq!(
            p.message.as_deref(),
            Some(format!("step {}", i + 1).as_str())
        );
    }
    // Without a callback no token is sent and nothing is reported.
    assert_eq!(
        text(s.call_tool("progress", json!({"steps": 3})).unwrap()),
        "progressed 3"
    );
}

#[test]
fn eight_threads_share_one_connection() {
    let s = Arc::new(demo(test_options()));
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let s = Arc::clone(&s);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut seen = HashSet::new();
                for i in 0..40 {
                    let want = format!("thread {t} call {i}");
                    let got = text(s.call_tool("echo", json!({"text": want})).unwrap());
                    assert_eq!(got, want, "a response reached the wrong caller");
                    seen.insert(got);
                }
                // A slow call in flight does not hold up the others.
                if t == 0 {
                    assert_eq!(
                        text(s.call_tool("slow", json!({"seconds": 0.3})).unwrap()),
                        "done after 0.3s"
                    );
                }
                seen.len()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 40);
    }
    assert_eq!(s.pending_requests(), 0);
}

#[test]
fn older_protocol_is_tolerated() {
    let cfg = script_config("old", "demo_mcp_server.py", &[])
        .with_env("DEMO_PROTOCOL_VERSION", "2025-06-18");
    let s = skald_mcp::McpServer::connect(&cfg, test_options()).unwrap();
    assert_eq!(s.protocol_version().as_deref(), Some("2025-06-18"));
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "still works"})).unwrap()),
        "still works"
    );
}

#[test]
fn env_interpolation_reaches_the_child() {
    std::env::set_var("SKALD_TEST_PROTO", "2024-11-05");
    let cfg = script_config("interp", "demo_mcp_server.py", &[])
        .with_env("DEMO_PROTOCOL_VERSION", "${SKALD_TEST_PROTO}");
    let s = skald_mcp::McpServer::connect(&cfg, test_options()).unwrap();
    assert_eq!(s.protocol_version().as_deref(), Some("2024-11-05"));
    let missing = script_config("m", "demo_mcp_server.py", &[])
        .with_env("X", "${SKALD_TEST_NOT_SET_ANYWHERE}");
    match skald_mcp::McpServer::connect(&missing, test_options()) {
        Err(McpError::Config { message, .. }) => {
            assert!(message.contains("SKALD_TEST_NOT_SET_ANYWHERE"))
        }
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn the_server_can_ping_the_client() {
    let s = demo(test_options());
    assert_eq!(
        text(s.call_tool("ping_client", json!({})).unwrap()),
        "pong: {}"
    );
}

#[test]
fn progress_can_keep_a_long_call_alive() {
    let s = demo(test_options());
    // 6 steps at 0.1 s each is longer than the 250 ms timeout, but every
    // update restarts it.
    let opts = CallOptions::new()
        .timeout(Duration::from_millis(250))
        .on_progress(|_| {})
        .progress_resets_timeout(true);
    let r = s.call_tool_with("progress", json!({"steps": 6, "interval": 0.1}), &opts);
    assert_eq!(text(r.unwrap()), "progressed 6");
    // Without the reset, the same call times out.
    let opts = CallOptions::new()
        .timeout(Duration::from_millis(250))
        .on_progress(|_| {});
    let r = s.call_tool_with("progress", json!({"steps": 6, "interval": 0.1}), &opts);
    assert!(matches!(r, Err(McpError::CallTimeout { .. })), "{r:?}");
}

#[test]
fn logging_level_filters_log_records() {
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = demo(test_options().logs(ltx));
    s.set_logging_level(LogLevel::Error).unwrap();
    s.call_tool("log", json!({"level": "warning", "message": "quiet"}))
        .unwrap();
    s.call_tool("log", json!({"level": "error", "message": "loud"}))
        .unwrap();
    s.close().unwrap();
    let records: Vec<String> = lrx
        .try_iter()
        .filter(|l| matches!(l.tag, LogTag::Level(_)))
        .map(|l| l.text)
        .collect();
    assert_eq!(records, ["demo: loud"]);
}

#[test]
fn structured_content_is_checked_against_the_output_schema() {
    let s = demo(test_options());
    // Before listing, the schema is unknown: nothing to check against.
    assert_eq!(
        structured(s.call_tool("bad_structured", json!({})).unwrap()),
        json!({"sum": "five"})
    );
    s.list_tools().unwrap();
    match s.call_tool("bad_structured", json!({})) {
        Err(McpError::SchemaMismatch { tool, message, .. }) => {
            assert_eq!(tool, "bad_structured");
            assert!(
                message.contains("/sum") && message.contains("expected number"),
                "{message}"
            );
        }
        other => panic!("expected SchemaMismatch, got {other:?}"),
    }
    // A conforming result passes.
    assert_eq!(
        structured(s.call_tool("add", json!({"a": 1, "b": 2})).unwrap()),
        json!({"sum": 3})
    );
    // By configuration, a mismatch is only a warning.
    let mut opts = test_options();
    opts.output_schema_validation = skald_mcp::OutputSchemaPolicy::Warn;
    let s = demo(opts);
    s.list_tools().unwrap();
    assert!(s.call_tool("bad_structured", json!({})).is_ok());
}

#[test]
fn list_changed_refreshes_the_cached_tools() {
    let (ntx, nrx) = crossbeam_channel::unbounded();
    let s = demo(test_options().notifications(ntx));
    assert!(s.cached_tools().is_none());
    let n = s.list_tools().unwrap().len();
    assert_eq!(s.cached_tools().unwrap().len(), n);
    s.call_tool("register_tool", json!({"name": "fresh"}))
        .unwrap();
    // The notification is also delivered to the embedder.
    let note = nrx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(note.method, "notifications/tools/list_changed");
    assert!(
        eventually(Duration::from_secs(10), || s
            .cached_tools()
            .is_some_and(|t| t.iter().any(|t| t.name == "fresh"))),
        "the background refresh did not pick up the new tool"
    );
    assert_eq!(s.cached_tools().unwrap().len(), n + 1);
}

/// A `notifications/message` record is cut like a stderr line: a 1 MB
/// message becomes one log line of at most MAX_STDERR_LINE bytes, marked.
#[test]
fn huge_log_records_are_cut() {
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = demo(test_options().logs(ltx));
    let big = "y".repeat(1_000_000);
    s.call_tool("log", json!({"level": "warning", "message": big}))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let l = lrx.recv_deadline(deadline).expect("the record arrives");
        if l.tag == LogTag::Level(LogLevel::Warning) {
            assert!(
                l.text.len() <= skald_mcp::limits::MAX_STDERR_LINE + 32,
                "{} bytes",
                l.text.len()
            );
            assert!(
                l.text.ends_with("[…truncated]"),
                "{}",
                &l.text[l.text.len() - 40..]
            );
            break;
        }
    }
}
