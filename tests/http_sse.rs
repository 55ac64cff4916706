//! The deprecated HTTP+SSE transport (MCP 2024-11-05) against the official
//! Python SDK's SSE server and the bundled `scripts/sse_mcp_server.py`:
//! tools, notifications and logs, elicitation, cancellation, a dropped
//! stream, an endpoint on another origin, a stream that never names its
//! endpoint, and `close()` ending the stream.

mod common;
mod http_support;

use std::time::{Duration, Instant};

use common::eventually;
use http_support::*;
use serde_json::{json, Value};
use skald_mcp::{
    connect, CallOptions, CancelToken, ElicitationRequest, ElicitationResponse, LogTag,
    McpCallResult, McpError, McpServerClient, McpServerConfig, McpSseServer, McpTransport,
};

fn sse_config(name: &str, port: u16) -> McpServerConfig {
    let cfg = McpServerConfig::sse(name, format!("http://127.0.0.1:{port}/sse"));
    assert_eq!(cfg.transport, McpTransport::Sse);
    cfg
}

fn text(r: McpCallResult) -> String {
    match r {
        McpCallResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

fn bundled(mode: &str) -> Server {
    Server::start("scripts/sse_mcp_server.py", &["--mode", mode])
}

fn state(s: &Server) -> Value {
    let body = ureq::get(format!("http://127.0.0.1:{}/_state", s.port))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    serde_json::from_str(&body).unwrap()
}

fn answer_name(_: &ElicitationRequest) -> ElicitationResponse {
    let mut m = serde_json::Map::new();
    m.insert("name".into(), json!("Ada"));
    ElicitationResponse::Accept(m)
}

#[test]
fn the_official_sdk_sse_server_tools_logs_and_elicitation() {
    let Some(server) = Server::fastmcp(&["--sse"]) else {
        return;
    };
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let opts = test_options().logs(ltx).elicitation_handler(answer_name);
    let c = connect(&sse_config("fm-sse", server.port), opts).unwrap();
    let info = c.initialize().unwrap();
    assert_eq!(info.server_info.name, "fastmcp-http-test");
    assert_eq!(info.era, skald_mcp::Era::Legacy);
    let names: Vec<String> = c
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "over SSE ✓"})).unwrap()),
        "over SSE ✓"
    );
    assert_eq!(
        text(c.call_tool("elicit_name", json!({})).unwrap()),
        "hello Ada"
    );
    assert_eq!(
        text(c.call_tool("log", json!({"message": "m1"})).unwrap()),
        "logged"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_log = false;
    while !saw_log && Instant::now() < deadline {
        if let Ok(l) = lrx.recv_timeout(Duration::from_millis(200)) {
            saw_log = matches!(l.tag, LogTag::Level(_)) && l.text.contains("m1");
        }
    }
    assert!(saw_log, "the server's log record reached the log channel");
    c.close().unwrap();
    assert!(!c.is_connected());
}

#[test]
fn bundled_server_tools_elicitation_and_cancellation() {
    let server = bundled("normal");
    let opts = test_options().elicitation_handler(answer_name);
    let c = McpSseServer::connect(&sse_config("sse", server.port), opts).unwrap();
    assert_eq!(c.protocol_version().as_deref(), Some("2024-11-05"));
    assert!(c.endpoint().unwrap().starts_with(&format!(
        "http://127.0.0.1:{}/messages?session=",
        server.port
    )));
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "hi"})).unwrap()),
        "hi"
    );
    assert_eq!(
        text(c.call_tool("ask", json!({})).unwrap()),
        r#"answer accept {"name": "Ada"}"#
    );
    // Cancelled from another thread: notifications/cancelled is posted.
    let c = std::sync::Arc::new(c);
    let token = CancelToken::new();
    let canceller = {
        let (c, t) = (std::sync::Arc::clone(&c), token.clone());
        std::thread::spawn(move || {
            assert!(eventually(Duration::from_secs(10), || c.pending_requests() == 1));
            t.cancel_with("enough");
        })
    };
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    canceller.join().unwrap();
    assert!(matches!(e, McpError::Cancelled { .. }), "{e:?}");
    let mut cancels = Value::Null;
    eventually(Duration::from_secs(10), || {
        cancels = serde_json::from_str(&text(c.call_tool("cancels", json!({})).unwrap())).unwrap();
        cancels.as_array().is_some_and(|a| !a.is_empty())
    });
    assert_eq!(cancels.as_array().map(Vec::len), Some(1), "{cancels}");
    // A timeout on the same connection leaves it usable.
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(matches!(e, McpError::CallTimeout { .. }), "{e:?}");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "still"})).unwrap()),
        "still"
    );

    // close() ends the stream at once: the server sees it closed.
    assert_eq!(state(&server)["streams_open"], 1);
    c.close().unwrap();
    assert!(
        eventually(Duration::from_secs(5), || state(&server)["streams_open"]
            == 0),
        "the stream is closed"
    );
    assert!(matches!(
        c.call_tool("echo", json!({"text": "x"})),
        Err(McpError::Disconnected { .. })
    ));
}

#[test]
fn a_dropped_stream_fails_the_call_at_once() {
    let server = bundled("normal");
    let c = McpSseServer::connect(
        &sse_config("sse-drop", server.port),
        test_options().call_timeout(Duration::from_secs(60)),
    )
    .unwrap();
    let t0 = Instant::now();
    match c.call_tool("drop", json!({})) {
        Err(McpError::Disconnected { reason, .. }) => {
            assert!(reason.contains("event stream ended"), "{reason}")
        }
        other => panic!("expected Disconnected, got {other:?}"),
    }
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "not the call timeout"
    );
    assert!(!c.is_connected());
    c.close().unwrap();
}

#[test]
fn an_endpoint_on_another_origin_is_refused() {
    let server = bundled("foreign_endpoint");
    let e =
        McpSseServer::connect(&sse_config("sse-evil", server.port), test_options()).unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("evil.example") && shown.contains("origin"),
        "{shown}"
    );
    assert_eq!(state(&server)["posts"], 0, "nothing was posted anywhere");
}

#[test]
fn a_stream_without_an_endpoint_and_a_non_sse_answer_are_bounded_errors() {
    let server = bundled("no_endpoint");
    let t0 = Instant::now();
    let opts = test_options().start_timeout(Duration::from_secs(2));
    let e = McpSseServer::connect(&sse_config("sse-mute", server.port), opts).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(10), "bounded");
    assert!(e.to_string().contains("no endpoint event"), "{e}");
    assert!(
        eventually(Duration::from_secs(5), || state(&server)["streams_open"]
            == 0),
        "the stream was closed"
    );

    let server = bundled("not_sse");
    let e =
        McpSseServer::connect(&sse_config("sse-json", server.port), test_options()).unwrap_err();
    assert!(e.to_string().contains("not an event stream"), "{e}");
}

/// Transport `http` at an HTTP+SSE server: Streamable HTTP is refused
/// (`405`), the client falls back to HTTP+SSE at the same URL, says so in
/// the log channel, and remembers the URL so the next connection goes
/// there at once; the manager does the same.
#[test]
fn http_falls_back_to_sse_and_remembers_it() {
    let server = bundled("normal");
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let c = connect(
        &McpServerConfig::http("fallback", &url),
        test_options().logs(ltx),
    )
    .unwrap();
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "via SSE"})).unwrap()),
        "via SSE"
    );
    let lines: Vec<String> = lrx.try_iter().map(|l| l.text).collect();
    assert!(
        lines.iter().any(|l| l.contains("trying HTTP+SSE")),
        "{lines:?}"
    );
    c.close().unwrap();
    let refused = state(&server)["refused_posts"].as_u64().unwrap();
    assert!(refused >= 1, "Streamable HTTP was tried first");
    let again = connect(&McpServerConfig::http("fallback", &url), test_options()).unwrap();
    assert_eq!(
        text(again.call_tool("echo", json!({"text": "x"})).unwrap()),
        "x"
    );
    again.close().unwrap();
    assert_eq!(
        state(&server)["refused_posts"].as_u64().unwrap(),
        refused,
        "the second connection went to HTTP+SSE at once"
    );

    // The manager, with a URL it has not seen yet.
    let other = bundled("normal");
    let dir = std::env::temp_dir().join(format!("skald-sse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut mc = skald_mcp::manager::ManagerConfig::in_dir(&dir);
    mc.client = test_options();
    mc.restart.enabled = true;
    mc.restart.initial_backoff = Duration::from_millis(50);
    let m = skald_mcp::manager::McpManager::open(mc).unwrap();
    m.register(McpServerConfig::http(
        "old",
        format!("http://127.0.0.1:{}/sse", other.port),
    ))
    .unwrap();
    let r = m
        .call("mcp__old__echo", json!({"text": "managed"}))
        .unwrap();
    assert_eq!(r.to_wire(), "managed");
    // The stream drops: the call fails at once and the manager reconnects
    // (a new stream, a new session) with its restart policy.
    assert!(matches!(
        m.call("mcp__old__drop", json!({})),
        Err(McpError::Disconnected { .. })
    ));
    assert!(
        eventually(Duration::from_secs(20), || m
            .call("mcp__old__echo", json!({"text": "back"}))
            .is_ok_and(|r| r.to_wire() == "back")),
        "the manager reconnected"
    );
    assert!(state(&other)["streams_closed"].as_u64().unwrap() >= 1);
    m.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Neither transport: the error names both attempts.
#[test]
fn an_error_names_both_attempts_when_neither_works() {
    let server = bundled("normal");
    let cfg = McpServerConfig::http("nothing", format!("http://127.0.0.1:{}/nope", server.port));
    let Err(e) = connect(&cfg, test_options()) else {
        panic!("connected to nothing");
    };
    let e = e.to_string();
    assert!(
        e.contains("Streamable HTTP") && e.contains("HTTP+SSE") && e.contains("404"),
        "{e}"
    );
}

/// The HTTP transport found is kept with the server's row (migration
/// 0007), like its era: a manager that finds an `http` server speaking only
/// HTTP+SSE records `sse`; a row that says `sse` sends the next start to
/// HTTP+SSE at once, also for a URL this process never saw (no refused
/// POST); and a row that says `sse` for a server that moved to Streamable
/// HTTP is corrected: its GET is refused, Streamable HTTP works, the row
/// then says `http`.
#[test]
fn the_http_transport_found_is_kept_with_the_servers_row() {
    use skald_mcp::manager::{ManagerConfig, McpManager};
    let dir = std::env::temp_dir().join(format!("skald-sse-row-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut mc = ManagerConfig::in_dir(&dir);
    mc.client = test_options();
    let m = McpManager::open(mc).unwrap();

    let first = bundled("normal");
    m.register(McpServerConfig::http(
        "found",
        format!("http://127.0.0.1:{}/sse", first.port),
    ))
    .unwrap();
    assert_eq!(
        m.call("mcp__found__echo", json!({"text": "a"}))
            .unwrap()
            .to_wire(),
        "a"
    );
    assert_eq!(
        m.store().server_wire("found").unwrap(),
        Some(McpTransport::Sse)
    );
    assert!(state(&first)["refused_posts"].as_u64().unwrap() >= 1);

    // A server registered disabled, its row set to `sse`, then started.
    let start_with_row = |name: &str, url: String, wire: McpTransport| {
        let mut cfg = McpServerConfig::http(name, url);
        cfg.enabled = false;
        m.register(cfg).unwrap();
        assert!(m.store().set_server_wire(name, wire).unwrap());
        m.set_enabled(name, true).unwrap();
        m.restart(name).unwrap();
    };
    let second = bundled("normal");
    start_with_row(
        "known",
        format!("http://127.0.0.1:{}/sse", second.port),
        McpTransport::Sse,
    );
    assert_eq!(
        m.call("mcp__known__echo", json!({"text": "b"}))
            .unwrap()
            .to_wire(),
        "b"
    );
    assert_eq!(
        state(&second)["refused_posts"].as_u64().unwrap(),
        0,
        "the row sent the first start to HTTP+SSE"
    );

    let moved = Server::hostile(&["--get", "405"]);
    start_with_row("moved", moved.url(), McpTransport::Sse);
    assert_eq!(
        m.call("mcp__moved__echo", json!({"text": "c"}))
            .unwrap()
            .to_wire(),
        "c"
    );
    assert_eq!(
        m.store().server_wire("moved").unwrap(),
        Some(McpTransport::Http)
    );
    let verbs: Vec<String> = moved
        .received()
        .iter()
        .map(|r| r["verb"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(verbs.first().map(String::as_str), Some("GET"), "{verbs:?}");
    let log = std::fs::read_to_string(m.store().log_path("moved")).unwrap();
    assert!(
        log.contains("HTTP+SSE refused") && log.contains("trying Streamable HTTP"),
        "{log}"
    );
    m.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CLI reaches an HTTP+SSE-only server with `--url` alone, and a
/// stored `http` server that fell back is shown as `http/sse` and goes to
/// HTTP+SSE at once in the next process (the row, not process memory).
#[test]
fn the_cli_connects_to_an_sse_only_server_with_url_alone() {
    let server = bundled("normal");
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let dir = std::env::temp_dir().join(format!("skald-sse-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cli = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_skald-mcp"))
            .args(args)
            .env("SKALD_MCP_DB", dir.join("mcp.db"))
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let tools = cli(&["connect", "tools", "--url", &url]);
    assert!(tools.contains("echo"), "{tools}");
    assert!(cli(&["connect", "call", "echo", "--arg", "text=hi", "--url", &url]).contains("hi"));
    cli(&["add", "old", "--url", &url]);
    assert!(cli(&["call", "old", "echo", "--arg", "text=one"]).contains("one"));
    let refused = state(&server)["refused_posts"].as_u64().unwrap();
    assert!(cli(&["call", "old", "echo", "--arg", "text=two"]).contains("two"));
    assert_eq!(
        state(&server)["refused_posts"].as_u64().unwrap(),
        refused,
        "the second process went to HTTP+SSE at once"
    );
    let list = cli(&["list"]);
    assert!(list.contains("http/sse"), "{list}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Progress for a call arrives on the stream and reaches the call's
/// progress channel, in order; a message past `max_message_size` fails the
/// call in flight with `MessageTooLarge` instead of being buffered.
#[test]
fn progress_and_the_message_size_bound() {
    let server = bundled("normal");
    let c = connect(&sse_config("sse-p", server.port), test_options()).unwrap();
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "progress",
            json!({"steps": 3}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "progressed");
    let seen: Vec<(f64, Option<String>)> =
        prx.try_iter().map(|p| (p.progress, p.message)).collect();
    assert_eq!(
        seen,
        vec![
            (1.0, Some("step 1".into())),
            (2.0, Some("step 2".into())),
            (3.0, Some("step 3".into()))
        ]
    );
    c.close().unwrap();

    let mut opts = test_options();
    opts.max_message_size = 64 * 1024;
    let c = connect(&sse_config("sse-big", server.port), opts).unwrap();
    assert_eq!(
        text(c.call_tool("big", json!({"bytes": 1000})).unwrap()).len(),
        1000
    );
    match c.call_tool("big", json!({"bytes": 200_000})) {
        Err(McpError::MessageTooLarge { limit, .. }) => assert_eq!(limit, 64 * 1024),
        other => panic!("expected MessageTooLarge, got {other:?}"),
    }
    c.close().unwrap();
}

/// The manager stores an HTTP+SSE server's notifications as pending
/// events, like any other transport's.
#[test]
fn notifications_over_sse_land_in_the_managers_store() {
    use skald_mcp::manager::{ManagerConfig, McpManager};
    let server = bundled("normal");
    let dir = std::env::temp_dir().join(format!("skald-sse-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut mc = ManagerConfig::in_dir(&dir);
    mc.client = test_options();
    let m = McpManager::open(mc).unwrap();
    m.register(sse_config("ev", server.port)).unwrap();
    assert_eq!(
        m.call("mcp__ev__notify", json!({"n": 5}))
            .unwrap()
            .to_wire(),
        "notified"
    );
    assert!(
        eventually(Duration::from_secs(10), || {
            m.store().flush().is_ok()
                && m.store()
                    .pending_events(usize::MAX)
                    .is_ok_and(|e| e.iter().filter(|e| e.method == "event/sse").count() == 5)
        }),
        "five events stored"
    );
    let events = m.store().pending_events(usize::MAX).unwrap();
    let ours: Vec<&Value> = events
        .iter()
        .filter(|e| e.server == "ev" && e.method == "event/sse")
        .map(|e| &e.params)
        .collect();
    assert_eq!(ours.first(), Some(&&json!({"i": 1})));
    assert_eq!(ours.last(), Some(&&json!({"i": 5})));
    m.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `http` at a Streamable HTTP server makes no HTTP+SSE attempt: the first
/// request is the POST of the handshake, and no GET is sent without the
/// session the handshake gave.
#[test]
fn no_fallback_attempt_on_a_streamable_http_server() {
    let server = Server::hostile(&[]);
    let c = connect(
        &McpServerConfig::http("modern", server.url()),
        test_options(),
    )
    .unwrap();
    assert_eq!(c.transport(), Some(McpTransport::Http));
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "x"})).unwrap()),
        "x"
    );
    c.close().unwrap();
    let received = server.received();
    assert_eq!(received[0]["verb"], "POST", "{:?}", received[0]);
    for r in received.iter().filter(|r| r["verb"] == "GET") {
        let headers = r["headers"].to_string().to_ascii_lowercase();
        assert!(
            headers.contains("mcp-session-id"),
            "a GET without session: {r}"
        );
    }
}

/// `McpServerConfig::headers` go with the event stream's GET and with
/// every POST of HTTP+SSE too, also through the CLI's `--header`.
#[test]
fn configured_headers_go_with_the_stream_and_the_posts() {
    let server = bundled("normal");
    let cfg = sse_config("sse-hdr", server.port).with_header("X-Api-Key", "k-123");
    let c = McpSseServer::connect(&cfg, test_options()).unwrap();
    let seen: Value =
        serde_json::from_str(&text(c.call_tool("headers", json!({})).unwrap())).unwrap();
    assert_eq!(seen["get"]["x-api-key"], "k-123", "{seen}");
    assert_eq!(seen["post"]["x-api-key"], "k-123", "{seen}");
    c.close().unwrap();
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_skald-mcp"))
        .args([
            "connect",
            "call",
            "headers",
            "--url",
            &url,
            "--header",
            "X-Api-Key: from-cli",
            "--sse",
        ])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let seen: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(seen["post"]["x-api-key"], "from-cli", "{seen}");
}
