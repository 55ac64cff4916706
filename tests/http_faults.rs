//! HTTP faults beyond `http_hostile.rs`: a connection reset in the middle of
//! a JSON body, `429`/`503` with `Retry-After` (a bounded retry for requests
//! that are safe to repeat, a typed error naming the status for the rest),
//! an event stream that never answers (the call times out and its thread
//! ends), and a huge response header. Every failure is a typed error that
//! arrives well before the call timeout; the connection stays usable.

mod common;
mod http_support;

use std::time::{Duration, Instant};

use common::eventually;
use http_support::*;
use serde_json::json;
use skald_mcp::{
    CallOptions, ClientOptions, McpCallResult, McpError, McpHttpServer, McpServerClient,
    McpServerConfig,
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

fn status_of(e: &McpError) -> Option<u16> {
    match e {
        McpError::Http { status, .. } => *status,
        _ => None,
    }
}

/// Threads of this process whose (15-byte) name is `name`.
/// Threads of this process named `name`, once those that have ended are
/// gone: the kernel drops an ended thread from /proc/self/task a moment
/// after its joiner is woken, so a count right after `close()` may still
/// see it (a thread blocked for good would stay past the bound).
fn threads_named_after_join(name: &str) -> usize {
    let mut n = threads_named(name);
    eventually(Duration::from_millis(500), || {
        n = threads_named(name);
        n == 0
    });
    n
}

fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .filter(|s| s.trim() == name)
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_reset_in_the_middle_of_a_json_body_is_a_typed_error() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-reset", test_options());
    let started = Instant::now();
    let e = c.call_tool("reset_json", json!({})).unwrap_err();
    assert!(matches!(e, McpError::Http { .. }), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{e}");
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "after"})).unwrap()),
        "after"
    );
    c.close().unwrap();
}

#[test]
fn busy_on_a_tool_call_is_an_error_naming_the_status_and_retry_after() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-busy", test_options());
    for (status, reason) in [(429, "Too Many Requests"), (503, "Service Unavailable")] {
        let e = c
            .call_tool("busy", json!({"status": status, "retry_after": "7"}))
            .unwrap_err();
        assert_eq!(status_of(&e), Some(status), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(reason) && msg.contains("Retry-After 7 s"),
            "{msg}"
        );
    }
    // A tools/call is never repeated: the server saw each exactly once.
    let calls = server
        .posts_of("tools/call")
        .into_iter()
        .filter(|r| r["body"]["params"]["name"] == "busy")
        .count();
    assert_eq!(calls, 2);
    let e = c.call_tool("error500", json!({})).unwrap_err();
    assert_eq!(status_of(&e), Some(500), "{e:?}");
    c.close().unwrap();
}

#[test]
fn safe_requests_are_retried_after_retry_after() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-retry", test_options());
    c.call_tool(
        "set_busy",
        json!({"method": "tools/list", "count": 2, "status": 503, "retry_after": "0"}),
    )
    .unwrap();
    let before = server.posts_of("tools/list").len();
    assert!(!c.list_tools().unwrap().is_empty());
    assert_eq!(
        server.posts_of("tools/list").len() - before,
        3,
        "two 503s, then the answer"
    );

    // `initialize` too, honouring a delay in seconds.
    c.call_tool(
        "set_busy",
        json!({"method": "initialize", "count": 1, "status": 429, "retry_after": "1"}),
    )
    .unwrap();
    let started = Instant::now();
    let d = connect(&server, "h-retry2", test_options());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After ignored"
    );
    assert_eq!(
        text(d.call_tool("echo", json!({"text": "in"})).unwrap()),
        "in"
    );
    d.close().unwrap();
    c.close().unwrap();
}

#[test]
fn retries_are_bounded_in_number_and_by_the_deadline() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-bound", test_options());
    c.call_tool(
        "set_busy",
        json!({"method": "tools/list", "count": 100, "status": 503, "retry_after": "0"}),
    )
    .unwrap();
    let before = server.posts_of("tools/list").len();
    let e = c.list_tools().unwrap_err();
    assert_eq!(status_of(&e), Some(503), "{e:?}");
    let tries = server.posts_of("tools/list").len() - before;
    assert_eq!(tries as u32, skald_mcp::limits::HTTP_MAX_RETRIES + 1, "{e}");

    // A Retry-After beyond the call's deadline fails at once.
    c.call_tool(
        "set_busy",
        json!({"method": "ping", "count": 1, "status": 503, "retry_after": "3600"}),
    )
    .unwrap();
    let started = Instant::now();
    let e = c.ping().unwrap_err();
    assert_eq!(status_of(&e), Some(503), "{e:?}");
    assert!(e.to_string().contains("Retry-After 3600 s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    c.call_tool(
        "set_busy",
        json!({"method": "tools/list", "count": 0, "status": 503}),
    )
    .unwrap();
    assert!(!c.list_tools().unwrap().is_empty());
    c.close().unwrap();
}

#[test]
fn a_never_ending_stream_times_out_and_its_thread_ends() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "he", test_options());
    let started = Instant::now();
    let e = c
        .call_tool_with(
            "endless_sse",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(500)),
        )
        .unwrap_err();
    assert!(matches!(e, McpError::CallTimeout { .. }), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The POST thread stops reading the stream even though bytes keep
    // coming (keep-alive comments, never an event): the server sees the
    // client go away.
    assert!(
        eventually(Duration::from_secs(10), || text(
            c.call_tool("endless_closed", json!({})).unwrap()
        ) == "1"),
        "the POST thread kept reading a stream nobody waits for"
    );
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
    assert!(
        threads_named("mcp-he-post") >= 1,
        "the POST threads are kept"
    );
    // close() interrupts what they read and joins them.
    c.close().unwrap();
    assert_eq!(threads_named_after_join("mcp-he-post"), 0);
    assert_eq!(threads_named_after_join("mcp-he-listen"), 0);
}

#[test]
fn a_huge_response_header_is_a_typed_error() {
    let server = Server::hostile(&[]);
    let c = connect(&server, "h-hdr", test_options());
    let started = Instant::now();
    let e = c
        .call_tool("huge_header", json!({"bytes": 1 << 20}))
        .unwrap_err();
    assert!(matches!(e, McpError::Http { .. }), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        text(c.call_tool("echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
    c.close().unwrap();
}

/// Calls whose callers only wait (no cancel token, no progress) are posted
/// on the callers' own threads, each over a pooled connection: four at
/// once, overlapping (the server sleeps 300 ms in each), start no POST
/// thread beyond the handshake's. Calls with a cancel token still go to
/// the POST threads, so that cancelling never waits for the network.
#[test]
fn plain_calls_post_on_their_callers_threads() {
    use std::sync::{Arc, Barrier};
    let server = Server::hostile(&[]);
    let c = Arc::new(connect(&server, "inl", test_options()));
    let before = threads_named("mcp-inl-post");
    let overlapping = |opts: CallOptions| {
        let barrier = Arc::new(Barrier::new(4));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (c, b, o) = (Arc::clone(&c), Arc::clone(&barrier), opts.clone());
                std::thread::spawn(move || {
                    b.wait();
                    text(
                        c.call_tool_with("slow", json!({"seconds": 0.3}), &o)
                            .unwrap(),
                    )
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), "slept");
        }
    };
    overlapping(CallOptions::new());
    assert_eq!(threads_named("mcp-inl-post"), before, "a POST thread ran");
    overlapping(CallOptions::new().cancel_token(skald_mcp::CancelToken::new()));
    // Four at once, each on its own thread: a burst handed to one idle
    // thread that had not woken yet would run them one after the other.
    assert!(
        threads_named("mcp-inl-post") >= 4,
        "four overlapping calls with a cancel token did not get four POST threads \
         (before: {before}, now: {})",
        threads_named("mcp-inl-post")
    );
    c.close().unwrap();
    assert_eq!(threads_named_after_join("mcp-inl-post"), 0);
}
