//! The HTTP client against `scripts/hostile_http_server.py`: what exactly
//! it sends (headers, session, protocol version), and how it copes with a
//! server that drops streams, expires sessions, sends garbage, answers
//! slowly or with the wrong thing. Every failure must be a typed error that
//! arrives well before the call timeout, never a hang.

mod http_support;

use std::time::{Duration, Instant};

use http_support::*;
use serde_json::{json, Value};
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, ElicitationRequest, ElicitationResponse, LogLevel,
    LogTag, McpCallResult, McpError, McpHttpServer, McpServerClient, McpServerConfig,
};

fn connect(server: &Server, name: &str, opts: ClientOptions) -> McpHttpServer {
    McpHttpServer::connect(&McpServerConfig::http(name, server.url()), opts).expect("connects")
}

fn text(r: McpCallResult) -> String {
    match r {
        McpCallResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

/// Asserts an HTTP error for `tools/call` with `status`, whose message
/// contains every needle; returns the message.
fn http_error(
    r: skald_mcp::Result<McpCallResult>,
    status: Option<u16>,
    needles: &[&str],
) -> String {
    match r {
        Err(McpError::Http {
            server,
            method,
            status: s,
            message,
            ..
        }) => {
            assert!(!server.is_empty());
            assert_eq!(method.as_deref(), Some("tools/call"), "{message}");
            assert_eq!(s, status, "{message}");
            for n in needles {
                assert!(message.contains(n), "{message:?} lacks {n:?}");
            }
            message
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
}

fn header<'a>(req: &'a Value, name: &str) -> Option<&'a str> {
    req["headers"][name].as_str()
}

/// The server is the only witness of some things the client does on its
/// threads (a fire-and-forget POST); this waits for it to record one,
/// bounded.
fn eventually_received(server: &Server, what: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(r) = server.received().into_iter().find(&mut pred) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "the server never received {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Names of this process's threads (truncated to 15 bytes by the kernel).
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .map(|s| s.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn headers_session_and_protocol_version_on_every_request() {
    let server = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-headers", opts);
    wait_log(&logs, "listening for server messages on the GET stream");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "hi"})).unwrap()),
        "hi"
    );
    let sid = c.session_id().expect("a session id");
    c.close().unwrap();

    let all = server.received();
    let init = &server.posts_of("initialize")[0];
    // initialize carries neither the session id nor the protocol version.
    assert_eq!(header(init, "mcp-session-id"), None);
    assert_eq!(header(init, "mcp-protocol-version"), None);
    assert_eq!(
        header(init, "accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(header(init, "content-type"), Some("application/json"));
    assert_eq!(header(init, "authorization"), None);
    assert_eq!(init["body"]["params"]["protocolVersion"], "2025-11-25");
    // No handler: no elicitation capability.
    assert_eq!(
        init["body"]["params"]["capabilities"],
        json!({"experimental": {"tasks": {}}})
    );
    // The era probe came first, as a modern request: no session, the
    // modern version in the header and in `_meta`, the method mirrored.
    let probe = &server.posts_of("server/discover")[0];
    assert_eq!(header(probe, "mcp-session-id"), None);
    assert_eq!(header(probe, "mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(header(probe, "mcp-method"), Some("server/discover"));
    assert_eq!(
        probe["body"]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    // Every later request carries both.
    let later: Vec<&Value> = all
        .iter()
        .filter(|r| {
            r["path"] == "/mcp"
                && r["body"]["method"] != "initialize"
                && r["body"]["method"] != "server/discover"
        })
        .collect();
    let verbs: Vec<&str> = later.iter().filter_map(|r| r["verb"].as_str()).collect();
    for v in ["POST", "GET", "DELETE"] {
        assert!(verbs.contains(&v), "no {v} in {verbs:?}");
    }
    for r in &later {
        assert_eq!(header(r, "mcp-session-id"), Some(sid.as_str()), "{r}");
        assert_eq!(header(r, "mcp-protocol-version"), Some("2025-11-25"), "{r}");
    }
    let get = later.iter().find(|r| r["verb"] == "GET").unwrap();
    assert_eq!(header(get, "accept"), Some("text/event-stream"));
    assert_eq!(header(get, "last-event-id"), None);
    assert_eq!(server.posts_of("notifications/initialized").len(), 1);
    assert_eq!(server.posts_of("tools/call").len(), 1);
    assert_eq!(all.iter().filter(|r| r["verb"] == "DELETE").count(), 1);
}

#[test]
fn a_moved_endpoint_is_followed_with_method_and_body() {
    // Plain-http POSTs are written by skald-mcp's own HTTP/1.1 code; a
    // redirect goes back through ureq, which follows it.
    let server = Server::hostile(&[]);
    let opts = test_options();
    let agent = format!("{}/{}", opts.client_name, opts.client_version);
    let url = server.url().replace("/mcp", "/moved");
    let c = McpHttpServer::connect(&McpServerConfig::http("h-moved", url), opts).expect("connects");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "moved"})).unwrap()),
        "moved"
    );
    c.close().unwrap();
    let calls: Vec<Value> = server
        .posts_of("tools/call")
        .into_iter()
        .filter(|r| r["body"]["params"]["name"] == "echo")
        .collect();
    let paths: Vec<&str> = calls.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(paths.first(), Some(&"/moved"), "{paths:?}");
    assert_eq!(paths.last(), Some(&"/mcp"), "{paths:?}");
    for r in &calls {
        assert_eq!(r["body"]["params"]["arguments"]["text"], "moved", "{r}");
        assert_eq!(header(r, "user-agent"), Some(agent.as_str()), "{r}");
    }
}

#[test]
fn elicitation_capability_only_with_a_handler() {
    let server = Server::hostile(&[]);
    let opts =
        test_options().elicitation_handler(|_: &ElicitationRequest| ElicitationResponse::Cancel);
    let c = connect(&server, "h-caps", opts);
    c.close().unwrap();
    let init = &server.posts_of("initialize")[0];
    assert_eq!(
        init["body"]["params"]["capabilities"],
        json!({"elicitation": {}, "experimental": {"tasks": {}}})
    );
}

#[test]
fn sse_split_across_reads_with_a_log_first() {
    let server = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-split", opts);
    assert_eq!(
        text(
            c.call_tool("sse_echo", json!({"text": "in pieces"}))
                .unwrap()
        ),
        "in pieces"
    );
    let line = wait_log(&logs, "sse_echo says hi");
    assert_eq!(line.tag, LogTag::Level(LogLevel::Info));
    c.close().unwrap();
}

#[test]
fn dropped_stream_is_resumed_with_last_event_id() {
    let server = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-resume", opts);
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "drop_resumable",
            json!({}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "resumed");
    let got: Vec<String> = prx.try_iter().filter_map(|p| p.message).collect();
    assert_eq!(got, ["before the drop", "after the drop"]);
    wait_log(&logs, "resuming after event \"s1-1\" in 100 ms");
    let resumed: Vec<Value> = server
        .received()
        .into_iter()
        .filter(|r| r["verb"] == "GET" && header(r, "last-event-id") == Some("s1-1"))
        .collect();
    assert_eq!(resumed.len(), 1);
    assert_eq!(
        header(&resumed[0], "mcp-session-id"),
        c.session_id().as_deref()
    );
    assert_eq!(header(&resumed[0], "accept"), Some("text/event-stream"));
    c.close().unwrap();
}

#[test]
fn a_drop_without_event_ids_fails_the_call_at_once() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-drop", test_options());
    let started = Instant::now();
    http_error(
        c.call_tool("drop_unresumable", json!({})),
        Some(200),
        &["ended before the response", "no event id"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "must not wait for the call timeout"
    );
    // The connection is still usable.
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "still here"})).unwrap()),
        "still here"
    );
    c.close().unwrap();
}

#[test]
fn garbage_sse_is_survived_or_a_typed_error() {
    let server = Server::hostile(&[]);
    let (opts, notes, logs) = wired_options();
    let c = connect(&server, "h-garbage", opts);
    assert_eq!(
        text(c.call_tool("garbage", json!({})).unwrap()),
        "survived the garbage"
    );
    wait_log(&logs, "ignored a malformed message");
    // An event of another type than `message` is not dispatched.
    assert!(notes.try_iter().all(|n| n.method != "notifications/weird"));
    http_error(
        c.call_tool("garbage_only", json!({})),
        Some(200),
        &["ended before the response"],
    );
    c.close().unwrap();
}

#[test]
fn expired_session_is_reinitialized_once_and_the_request_retried() {
    let server = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-expire", opts);
    let first = c.session_id().unwrap();
    assert_eq!(text(c.call_tool("expire", json!({})).unwrap()), "expired");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "after"})).unwrap()),
        "after"
    );
    let second = c.session_id().unwrap();
    assert_ne!(first, second);
    wait_log(&logs, "the session expired (HTTP 404); re-initializing");
    assert_eq!(server.posts_of("initialize").len(), 2);
    let echoes: Vec<Value> = server
        .posts_of("tools/call")
        .into_iter()
        .filter(|r| r["body"]["params"]["name"] == "echo")
        .collect();
    // The same request twice: first with the expired session, then retried
    // with the new one.
    assert_eq!(echoes.len(), 2);
    assert_eq!(echoes[0]["body"]["id"], echoes[1]["body"]["id"]);
    assert_eq!(header(&echoes[0], "mcp-session-id"), Some(first.as_str()));
    assert_eq!(header(&echoes[1], "mcp-session-id"), Some(second.as_str()));
    let reinit = &server.posts_of("initialize")[1];
    assert_eq!(header(reinit, "mcp-session-id"), None);
    assert_eq!(header(reinit, "mcp-protocol-version"), None);
    c.close().unwrap();
}

#[test]
fn a_second_404_is_an_error() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-404", test_options());
    c.call_tool("expire_forever", json!({})).unwrap();
    http_error(
        c.call_tool("echo", json!({"text": "x"})),
        Some(404),
        &["expired again"],
    );
    // Exactly one re-initialization was attempted.
    assert_eq!(server.posts_of("initialize").len(), 2);
    // This server keeps the first session's GET stream open (and silent but
    // for keep-alives); close() is still bounded.
    let started = Instant::now();
    c.close().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn slow_answers_and_timeouts() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-slow", test_options());
    assert_eq!(
        text(c.call_tool("slow", json!({"seconds": 0.5})).unwrap()),
        "slept"
    );
    let started = Instant::now();
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 5}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    assert!(
        matches!(&e, McpError::CallTimeout { method, .. } if method == "tools/call"),
        "{e:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    // The timeout told the server to stop.
    let cancel = eventually_received(&server, "notifications/cancelled", |r| {
        r["body"]["method"] == "notifications/cancelled"
    });
    assert_eq!(cancel["body"]["params"]["reason"], "timeout");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
    c.close().unwrap();
}

#[test]
fn stray_progress_in_the_response_stream_cannot_stall_the_caller() {
    // 200 progress notifications for the call's id in its own SSE response:
    // the call asked for none, and its caller reads the stream itself (the
    // inline POST), so nothing would drain a queue of them but the caller.
    let server = Server::hostile(&[]);
    let c = std::sync::Arc::new(connect(&server, "h-stray", test_options()));
    let (tx, rx) = crossbeam_channel::bounded(1);
    let caller = std::sync::Arc::clone(&c);
    std::thread::spawn(move || {
        let _ = tx.send(caller.call_tool("stray_progress", json!({"count": 200})));
    });
    let r = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("the call stalled on progress it never asked for");
    assert_eq!(text(r.unwrap()), "after 200");
    // Asked for, every update reaches the callback, in order (the POST
    // thread that reads the stream waits for the caller when it must).
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let opts = CallOptions::new().on_progress(move |p| sink.lock().push(p.progress));
    let r = c.call_tool_with("stray_progress", json!({"count": 200}), &opts);
    assert_eq!(text(r.unwrap()), "after 200");
    let want: Vec<f64> = (1..=200).map(f64::from).collect();
    assert_eq!(*seen.lock(), want);
    c.close().unwrap();
}

#[test]
fn cancellation_sends_notifications_cancelled() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-cancel", test_options());
    let token = CancelToken::new();
    token.cancel_with("user pressed stop");
    let e = c
        .call_tool_with(
            "slow",
            json!({"seconds": 5}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    assert!(matches!(e, McpError::Cancelled { .. }), "{e:?}");
    let slow = server
        .posts_of("tools/call")
        .into_iter()
        .find(|r| r["body"]["params"]["name"] == "slow");
    let cancel = eventually_received(&server, "notifications/cancelled", |r| {
        r["body"]["method"] == "notifications/cancelled"
    });
    assert_eq!(cancel["body"]["params"]["reason"], "user pressed stop");
    if let Some(slow) = slow {
        assert_eq!(cancel["body"]["params"]["requestId"], slow["body"]["id"]);
    }
    assert_eq!(header(&cancel, "mcp-session-id"), c.session_id().as_deref());
    c.close().unwrap();
}

#[test]
fn wrong_content_type_bad_status_and_bad_json_are_typed() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-types", test_options());
    http_error(
        c.call_tool("html", json!({})),
        Some(200),
        &["text/html", "Gateway says hi"],
    );
    http_error(
        c.call_tool("error500", json!({})),
        Some(500),
        &["Internal Server Error", "upstream exploded"],
    );
    http_error(
        c.call_tool("bad_json", json!({})),
        Some(200),
        &["not a response", "this is not json"],
    );
    let shown = McpError::Http {
        server: "h-types".into(),
        method: Some("tools/call".into()),
        status: Some(500),
        message: "x".into(),
        source: None,
    }
    .to_string();
    assert_eq!(shown, "MCP server 'h-types': HTTP 500 during tools/call: x");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "fine"})).unwrap()),
        "fine"
    );
    c.close().unwrap();
}

#[test]
fn oversized_bodies_and_events_are_refused() {
    let server = Server::hostile(&[]);
    let c = connect(
        &server,
        "h-huge",
        test_options().max_message_size(64 * 1024),
    );
    http_error(
        c.call_tool("huge", json!({"bytes": 200_000})),
        Some(200),
        &["65536-byte limit"],
    );
    http_error(
        c.call_tool("huge_sse", json!({"bytes": 200_000})),
        Some(200),
        &["event of the response stream", "65536-byte limit"],
    );
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "small"})).unwrap()),
        "small"
    );
    c.close().unwrap();
}

#[test]
fn accepted_request_without_answer_is_an_error() {
    let server = Server::hostile(&["--get", "405"]);
    let c = connect(&server, "h-202", test_options());
    http_error(
        c.call_tool("accepted", json!({})),
        Some(202),
        &["without answering"],
    );
    c.close().unwrap();
}

#[test]
fn get_stream_notifications_logs_and_ping_replies() {
    let server = Server::hostile(&[]);
    let (opts, notes, logs) = wired_options();
    let c = connect(&server, "h-get", opts);
    wait_log(&logs, "listening for server messages on the GET stream");
    assert_eq!(
        text(c.call_tool("notify_get", json!({"n": 7})).unwrap()),
        "queued"
    );
    let n = wait_for(
        &notes,
        Duration::from_secs(20),
        "notifications/custom",
        |n| n.method == "notifications/custom",
    );
    assert_eq!(n.params, json!({"n": 7}));
    let line = wait_log(&logs, "get: from the GET stream 7");
    assert_eq!(line.tag, LogTag::Level(LogLevel::Warning));
    // The listener handles events in order and answers a ping with a POST
    // before it reads on: once notification 8 has arrived, the reply to
    // ping srv-7 has been received by the server.
    c.call_tool("notify_get", json!({"n": 8})).unwrap();
    wait_for(&notes, Duration::from_secs(20), "notification 8", |n| {
        n.params == json!({"n": 8})
    });
    let reply = server
        .received()
        .into_iter()
        .find(|r| r["verb"] == "POST" && r["body"]["id"] == "srv-7")
        .expect("the ping was answered");
    assert_eq!(reply["body"]["result"], json!({}));
    assert_eq!(header(&reply, "mcp-session-id"), c.session_id().as_deref());
    assert_eq!(header(&reply, "mcp-protocol-version"), Some("2025-11-25"));
    c.close().unwrap();
}

#[test]
fn get_405_means_no_listener() {
    let server = Server::hostile(&["--get", "405"]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-405", opts);
    wait_log(&logs, "the server offers no GET stream (HTTP 405)");
    assert!(!c.is_listening());
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "posts only"})).unwrap()),
        "posts only"
    );
    c.close().unwrap();
    let gets = server
        .received()
        .into_iter()
        .filter(|r| r["verb"] == "GET")
        .count();
    assert_eq!(gets, 1, "a 405 is not retried");
}

/// `connect` returns with the GET stream open: servers drop what they send
/// on that stream while it is not (the conformance suite's elicitation
/// scenario sends its `elicitation/create` there), so the first call must not
/// race it. Without a stream, `connect` does not wait.
#[test]
fn connect_returns_once_the_get_stream_is_open() {
    for n in 0..5 {
        let server = Server::hostile(&[]);
        let c = connect(&server, &format!("h-ready-{n}"), ClientOptions::default());
        assert!(
            c.is_listening(),
            "connect returned before the GET stream was open"
        );
        c.close().unwrap();
    }
    let server = Server::hostile(&["--get", "405"]);
    let started = Instant::now();
    let c = connect(&server, "h-ready-405", ClientOptions::default());
    assert!(started.elapsed() < skald_mcp::limits::HTTP_LISTEN_READY_WAIT);
    assert!(!c.is_listening());
    c.close().unwrap();
}

/// Servers that route only POST answer the GET with 400 or 404 (no session)
/// instead of 405, as two of the conformance suite's test servers do; that
/// is not retried either.
#[test]
fn get_400_or_404_without_a_session_means_no_listener() {
    for (status, args) in [
        ("400", &["--get", "400"][..]),
        ("404", &["--get", "404", "--no-session"][..]),
    ] {
        let server = Server::hostile(args);
        let (opts, _notes, logs) = wired_options();
        let c = connect(&server, &format!("h-get-{status}"), opts);
        wait_log(
            &logs,
            &format!("the server offers no GET stream (HTTP {status}"),
        );
        assert!(!c.is_listening());
        assert_eq!(
            text(c.call_tool("echo", json!({"text": "posts only"})).unwrap()),
            "posts only"
        );
        // A retry would come after SSE_DEFAULT_RETRY (1 s).
        std::thread::sleep(Duration::from_millis(1500));
        c.close().unwrap();
        let gets = server
            .received()
            .into_iter()
            .filter(|r| r["verb"] == "GET")
            .count();
        assert_eq!(gets, 1, "a {status} is not retried");
    }
}

#[test]
fn dropped_get_stream_is_reopened_with_last_event_id() {
    let server = Server::hostile(&["--drop-get-after", "1"]);
    let (opts, notes, logs) = wired_options();
    let c = connect(&server, "h-regets", opts);
    wait_log(&logs, "listening for server messages on the GET stream");
    c.call_tool("notify_get", json!({"n": 1})).unwrap();
    // The stream drops after each message; all three still arrive.
    wait_for(&notes, Duration::from_secs(20), "custom", |n| {
        n.method == "notifications/custom"
    });
    wait_log(&logs, "GET stream reopened (Last-Event-ID \"g-1\")");
    wait_log(&logs, "get: from the GET stream 1");
    let resumed = server
        .received()
        .into_iter()
        .find(|r| r["verb"] == "GET" && header(r, "last-event-id") == Some("g-1"))
        .expect("a GET with Last-Event-ID");
    assert_eq!(
        header(&resumed, "mcp-session-id"),
        c.session_id().as_deref()
    );
    c.close().unwrap();
}

#[test]
fn close_sends_delete_and_stops_the_threads() {
    let server = Server::hostile(&[]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-close", opts);
    wait_log(&logs, "listening for server messages on the GET stream");
    assert!(thread_names().iter().any(|n| n == "mcp-h-close-lis"));
    let sid = c.session_id().unwrap();
    let started = Instant::now();
    c.close().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    wait_log(&logs, "closed (session ended)");
    let delete = server
        .received()
        .into_iter()
        .find(|r| r["verb"] == "DELETE")
        .expect("a DELETE");
    assert_eq!(header(&delete, "mcp-session-id"), Some(sid.as_str()));
    assert!(!c.is_connected());
    assert!(matches!(
        c.call_tool("echo", json!({"text": "x"})),
        Err(McpError::Disconnected { .. })
    ));
    // Idempotent.
    c.close().unwrap();
    // DELETE ended the server's streams, and close() waited for the
    // listening thread: no thread of this connection is left. (The kernel
    // drops a joined thread from /proc/self/task a moment after its joiner
    // is woken: a short bound, which a thread left running would outlast.)
    let mut left: Vec<String>;
    let deadline = Instant::now() + Duration::from_millis(500);
    loop {
        left = thread_names()
            .into_iter()
            .filter(|n| n.starts_with("mcp-h-close"))
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(left.is_empty(), "threads left: {left:?}");
}

#[test]
fn failed_connect_is_a_typed_error_and_logged() {
    let mut server = Server::hostile(&[]);
    let url = server.url();
    server.kill();
    let (opts, _notes, logs) = wired_options();
    let e = McpHttpServer::connect(&McpServerConfig::http("h-down", url), opts).unwrap_err();
    assert!(
        // The first request is the era probe (a refused connection is no
        // era signal: it fails the connect at once), or `initialize` when
        // this process remembers the origin's era: another test's server
        // may have had the same port before (seen once in a full run).
        matches!(&e, McpError::Http { method: Some(m), status: None, .. }
            if m == "server/discover" || m == "initialize"),
        "{e:?}"
    );
    wait_log(&logs, "failed to start");
}

#[test]
fn tasks_are_polled_over_http() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-task", test_options());
    let tools = c.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "task_tool"));
    let (ptx, prx) = crossbeam_channel::unbounded();
    let r = c
        .call_tool_with(
            "task_tool",
            json!({}),
            &CallOptions::new().progress_channel(ptx),
        )
        .unwrap();
    assert_eq!(text(r), "task done");
    assert!(
        prx.try_iter().count() >= 1,
        "each poll is reported as progress"
    );
    let call = &server.posts_of("tools/call")[0];
    assert!(
        call["body"]["params"]["task"].is_object(),
        "the call opted in to a task"
    );
    let polls = server.posts_of("tasks/get");
    assert_eq!(polls.len(), 2);
    for p in &polls {
        assert_eq!(p["body"]["params"]["taskId"], "t-1");
        assert_eq!(header(p, "mcp-session-id"), c.session_id().as_deref());
        assert_eq!(header(p, "mcp-protocol-version"), Some("2025-11-25"));
    }
    assert_eq!(server.posts_of("tasks/result").len(), 1);
    c.close().unwrap();
}

/// The same server speaking MCP 2026-07-28 too (`--modern`): a dual-era
/// client picks it, sends no session, and follows the broken-stream rule.
/// A repeatable request (`tools/list`) whose stream breaks before its
/// response is sent again once, with a new id; a `tools/call` never is.
#[test]
fn broken_modern_streams_repeat_only_what_is_safe() {
    let server = Server::hostile(&["--modern", "--drop-first-list"]);
    let (opts, _notes, logs) = wired_options();
    let c = connect(&server, "h-modern", opts);
    assert_eq!(c.initialize().unwrap().era, skald_mcp::Era::Modern);
    assert_eq!(c.session_id(), None);
    // The first tools/list stream was dropped: the list still arrives.
    let tools = c.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let lists = server.posts_of("tools/list");
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert_ne!(lists[0]["body"]["id"], lists[1]["body"]["id"]);
    wait_log(&logs, "sending it again with a new id");
    // A dropped tools/call is a typed error, and was posted once.
    let e = c.call_tool("drop_unresumable", json!({})).unwrap_err();
    assert!(
        matches!(&e, McpError::StreamEnded { method, .. } if method == "tools/call"),
        "{e:?}"
    );
    let calls: Vec<Value> = server
        .posts_of("tools/call")
        .into_iter()
        .filter(|r| r["body"]["params"]["name"] == "drop_unresumable")
        .collect();
    assert_eq!(calls.len(), 1, "tools/call was repeated: {calls:?}");
    // Modern requests carry no session and the standard headers.
    assert_eq!(header(&calls[0], "mcp-session-id"), None);
    assert_eq!(header(&calls[0], "mcp-method"), Some("tools/call"));
    assert_eq!(header(&calls[0], "mcp-name"), Some("drop_unresumable"));
    assert_eq!(
        header(&calls[0], "mcp-protocol-version"),
        Some("2026-07-28")
    );
    assert!(server.posts_of("initialize").is_empty());
    c.close().unwrap();
}

/// The tasks extension over HTTP (2026-07-28): the server decides to answer
/// with a task handle (the call carries no `task` opt-in), the client polls
/// `tasks/get` with the task id in `Mcp-Name` and takes the inline result.
#[test]
fn extension_tasks_are_polled_over_http_with_the_task_id_in_mcp_name() {
    let server = Server::hostile(&["--modern"]);
    let c = connect(&server, "h-mtask", test_options());
    assert_eq!(c.initialize().unwrap().era, skald_mcp::Era::Modern);
    let r = c.call_tool("task_tool", json!({})).unwrap();
    assert_eq!(text(r), "modern task done");
    let call = &server.posts_of("tools/call")[0];
    assert!(
        call["body"]["params"].get("task").is_none(),
        "no 2025-11-25 opt-in under the extension: {call}"
    );
    let polls = server.posts_of("tasks/get");
    assert_eq!(polls.len(), 2);
    for p in &polls {
        assert_eq!(header(p, "mcp-name"), Some("m-1"));
        assert_eq!(header(p, "mcp-method"), Some("tasks/get"));
        assert_eq!(header(p, "mcp-session-id"), None);
    }
    assert!(server.posts_of("tasks/result").is_empty());
    c.close().unwrap();
}

/// `McpServerConfig::headers` go with every request of a Streamable HTTP
/// connection (the handshake, calls, the GET stream, the closing DELETE),
/// `${VAR}` resolved; their values count as secrets: a server that quotes
/// them back in an error body gets them redacted.
#[test]
fn configured_headers_go_with_every_request() {
    let server = Server::hostile(&[]);
    std::env::set_var("SKALD_TEST_HEADER_SECRET", "hdr-secret-4711");
    let cfg = McpServerConfig::http("hdr", server.url())
        .with_header("X-Api-Key", "${SKALD_TEST_HEADER_SECRET}")
        .with_header("X-Tenant", "acme");
    let c = McpHttpServer::connect(&cfg, test_options()).expect("connects");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
    let e = c.call_tool("auth_echo", json!({})).unwrap_err().to_string();
    assert!(e.contains("key=") && !e.contains("hdr-secret-4711"), "{e}");
    c.close().unwrap();
    let received = server.received();
    assert!(!received.is_empty());
    for r in &received {
        assert_eq!(r["headers"]["x-api-key"], "hdr-secret-4711", "{r}");
        assert_eq!(r["headers"]["x-tenant"], "acme", "{r}");
    }
    let verbs: std::collections::BTreeSet<&str> =
        received.iter().filter_map(|r| r["verb"].as_str()).collect();
    assert!(verbs.contains("POST"), "{verbs:?}");
    // A reserved header is refused before anything is sent.
    let bad = McpServerConfig::http("hdr2", server.url()).with_header("Mcp-Session-Id", "x");
    assert!(matches!(
        McpHttpServer::connect(&bad, test_options()),
        Err(McpError::Config { .. })
    ));
}
