//! A small, fast MCP server for benchmarks: newline-delimited JSON-RPC over
//! stdio (default) or Streamable HTTP (`--http 127.0.0.1:PORT`, JSON
//! responses only, one thread per TCP connection, HTTP/1.1 keep-alive).
//! It reads of each request only what it answers from, so that its share
//! of a call is small and the clients' shares show.
//!
//! Methods: `initialize`, `notifications/initialized`, `ping`, `tools/list`,
//! `tools/call` (tool `echo`).
//!
//! `echo` arguments (all optional):
//! * `size`     — the response text is `size` bytes of `x` (default 16);
//! * `text`     — echo this text instead;
//! * `delay_ms` — answer after this delay (on a thread of its own, so other
//!   requests keep flowing);
//! * `progress` — send this many `notifications/progress` first, when the
//!   request carries `_meta.progressToken`.
//!
//! Modes (flags, or the env variables in brackets):
//! * `--exit-after N` [`ECHO_EXIT_AFTER`] — exit(0) after answering N calls;
//! * `--hang` [`ECHO_HANG`=1] — never answer `tools/call`;
//! * `--http ADDR` [`ECHO_HTTP`] — serve Streamable HTTP on ADDR
//!   (`127.0.0.1:0` picks a port); the first stdout line is
//!   `listening http://ADDR/mcp`;
//! * `--tools N` [`ECHO_TOOLS`] — `tools/list` lists N tools in one page:
//!   `echo` first, then `t1`, `t2`, … (each a description of about 60
//!   characters and a one-property `inputSchema`; they cannot be called).
//!   Without it the list is `echo` alone;
//! * `--dual-era` [`ECHO_DUAL_ERA`=1] — also answer `server/discover`
//!   (MCP 2026-07-28), so that a dual-era client runs in the modern era;
//!   requests are answered the same either way (their `_meta` is scanned
//!   for the version and progress token, the rest skipped unbuilt).
//!   Without it `server/discover` is an unknown method, as on a legacy
//!   server;
//! * `--modern-results` [`ECHO_MODERN_RESULTS`=1] — with `--dual-era`, a
//!   request whose `_meta` names protocol version 2026-07-28 is answered
//!   with the fields that version's schema requires of results:
//!   `"resultType":"complete"` on every result, and `ttlMs` (0) and
//!   `cacheScope` on `tools/list`. Strict clients (the Python SDK) reject
//!   2026-07-28 results without them; lenient ones accept both. Off by
//!   default, so that `--dual-era` alone answers both eras with the same
//!   bytes.

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

struct Config {
    exit_after: Option<u64>,
    hang: bool,
    http: Option<String>,
    dual_era: bool,
    tools: Option<usize>,
    modern_results: bool,
}

fn config() -> Config {
    let mut c = Config {
        exit_after: std::env::var("ECHO_EXIT_AFTER")
            .ok()
            .and_then(|v| v.parse().ok()),
        hang: std::env::var("ECHO_HANG").is_ok_and(|v| v == "1"),
        http: std::env::var("ECHO_HTTP").ok().filter(|v| !v.is_empty()),
        dual_era: std::env::var("ECHO_DUAL_ERA").is_ok_and(|v| v == "1"),
        tools: std::env::var("ECHO_TOOLS")
            .ok()
            .and_then(|v| v.parse().ok()),
        modern_results: std::env::var("ECHO_MODERN_RESULTS").is_ok_and(|v| v == "1"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--exit-after" => c.exit_after = args.next().and_then(|v| v.parse().ok()),
            "--hang" => c.hang = true,
            "--http" => c.http = args.next(),
            "--dual-era" => c.dual_era = true,
            "--modern-results" => c.modern_results = true,
            "--tools" => {
                c.tools = Some(args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                    eprintln!("echo-server: --tools N");
                    std::process::exit(2)
                }))
            }
            "-h" | "--help" => {
                eprintln!(
                    "echo-server [--exit-after N] [--hang] [--http ADDR] [--dual-era] [--modern-results] [--tools N]"
                );
                std::process::exit(0);
            }
            other => {
                eprintln!("echo-server: unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    c
}

const ECHO_TOOL: &str = r#"{"name":"echo","description":"Echoes a payload of the requested size, after an optional delay, with optional progress.","inputSchema":{"type":"object","properties":{"size":{"type":"integer","minimum":0},"text":{"type":"string"},"delay_ms":{"type":"integer","minimum":0},"progress":{"type":"integer","minimum":0}}}}"#;

/// The `tools/list` result: `echo` alone, or `echo` and `t1`…`t{n-1}`.
fn tools_json(n: Option<usize>) -> String {
    let Some(n) = n else {
        return format!(r#"{{"tools":[{ECHO_TOOL}]}}"#);
    };
    let mut out = String::with_capacity(64 + n * 200);
    out.push_str(r#"{"tools":["#);
    for i in 0..n {
        if i == 0 {
            out.push_str(ECHO_TOOL);
            continue;
        }
        out.push(',');
        // The description is 60 characters for i < 1 000 000.
        out.push_str(&format!(
            r#"{{"name":"t{i}","description":"Listed tool number {i:06}, one of many; for list benchmarks.","inputSchema":{{"type":"object","properties":{{"q":{{"type":"string","description":"A query; ignored."}}}}}}}}"#
        ));
    }
    out.push_str("]}");
    out
}

/// A message as the server reads it: only the members it answers from.
/// The rest (the bulk of a 2026-07-28 request's `_meta`: client info and
/// capabilities) is skipped by the parser without being built; parsing
/// every request into a `Value` tree cost this server about 15 000
/// instructions more per 2026-07-28 call than per legacy call, more than
/// the client's whole call, and the era comparison measured the server.
#[derive(Deserialize)]
struct Msg {
    id: Option<Value>,
    method: Option<String>,
    #[serde(default)]
    params: Params,
}

/// The request params any of the server's methods reads.
#[derive(Deserialize, Default)]
struct Params {
    name: Option<String>,
    #[serde(default)]
    arguments: Value,
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Meta,
}

/// The `_meta` members the server reads.
#[derive(Deserialize, Default)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: Option<String>,
}

/// Where a message goes: the stdout writer, or the HTTP response body.
trait Sink {
    fn send(&self, line: Vec<u8>);
}

struct Server {
    cfg: Config,
    calls: AtomicU64,
    /// The `tools/list` result, built once.
    tools: String,
    /// The same with the 2026-07-28 result fields (`--modern-results`).
    tools_modern: String,
}

/// A string of `x`, sliced for payloads (made on first use).
fn filler() -> &'static str {
    static F: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    F.get_or_init(|| "x".repeat(2 * 1024 * 1024))
}

fn push_json_string(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("strings serialise");
}

impl Server {
    fn result_line(&self, id: &Value, result_json: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(result_json.len() + 48);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id).unwrap();
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(result_json.as_bytes());
        out.extend_from_slice(b"}\n");
        out
    }

    fn error_line(&self, id: &Value, code: i64, msg: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(96 + msg.len());
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id).unwrap();
        out.extend_from_slice(format!(r#","error":{{"code":{code},"message":"#).as_bytes());
        push_json_string(&mut out, msg);
        out.extend_from_slice(b"}}\n");
        out
    }

    /// `modern`: add the 2026-07-28 `resultType` (`--modern-results`).
    fn echo_line(&self, id: &Value, args: &Value, modern: bool) -> Vec<u8> {
        if let Some(t) = args.get("text").and_then(Value::as_str) {
            return self.echo_text(id, t, true, modern);
        }
        let size = args.get("size").and_then(Value::as_u64).unwrap_or(16) as usize;
        if size > filler().len() {
            // Larger than the prepared filler: built on demand.
            return self.echo_text(id, &"x".repeat(size), false, modern);
        }
        // The filler needs no escaping: copied as it is.
        self.echo_text(id, &filler()[..size], false, modern)
    }

    fn echo_text(&self, id: &Value, text: &str, escape: bool, modern: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 128);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id).unwrap();
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
        if escape {
            push_json_string(&mut out, text);
        } else {
            out.push(b'"');
            out.extend_from_slice(text.as_bytes());
            out.push(b'"');
        }
        if modern {
            out.extend_from_slice(b"}],\"isError\":false,\"resultType\":\"complete\"}}\n");
        } else {
            out.extend_from_slice(b"}],\"isError\":false}}\n");
        }
        out
    }

    fn progress_line(token: &Value, i: u64, total: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"#,
        );
        serde_json::to_writer(&mut out, token).unwrap();
        out.extend_from_slice(format!(r#","progress":{i},"total":{total}}}}}"#).as_bytes());
        out.push(b'\n');
        out
    }

    /// Handles one message; replies go to `sink` (possibly later, from
    /// another thread, for delayed calls). Returns false when nothing will
    /// ever be sent for it (a notification, or a hung call).
    fn handle<S: Sink + Clone + Send + 'static>(self: &Arc<Self>, msg: Msg, sink: &S) -> bool {
        let Some(method) = msg.method.as_deref() else {
            return false; // a response to nothing we asked: ignore
        };
        let Some(id) = msg.id else {
            return false; // notification
        };
        let params = msg.params;
        // A 2026-07-28 request, to be answered with that era's result fields.
        let modern = self.cfg.dual_era
            && self.cfg.modern_results
            && params.meta.version.as_deref() == Some("2026-07-28");
        match method {
            "initialize" => {
                let version = params.protocol_version.as_deref().unwrap_or("2025-06-18");
                let result = format!(
                    r#"{{"protocolVersion":{},"capabilities":{{"tools":{{"listChanged":false}}}},"serverInfo":{{"name":"echo-server","version":"0.0.0"}}}}"#,
                    Value::from(version)
                );
                sink.send(self.result_line(&id, &result));
            }
            "server/discover" if self.cfg.dual_era => sink.send(self.result_line(
                &id,
                r#"{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo-server","version":"0.0.0"}},"ttlMs":0,"cacheScope":"public"}"#,
            )),
            "ping" if modern => sink.send(self.result_line(&id, r#"{"resultType":"complete"}"#)),
            "ping" => sink.send(self.result_line(&id, "{}")),
            "tools/list" if modern => sink.send(self.result_line(&id, &self.tools_modern)),
            "tools/list" => sink.send(self.result_line(&id, &self.tools)),
            "tools/call" => {
                if self.cfg.hang {
                    return false;
                }
                let name = params.name.as_deref().unwrap_or("");
                if name != "echo" {
                    sink.send(self.error_line(&id, -32602, &format!("unknown tool: {name}")));
                    return true;
                }
                let args = params.arguments;
                let delay = args.get("delay_ms").and_then(Value::as_u64).unwrap_or(0);
                let progress = args.get("progress").and_then(Value::as_u64).unwrap_or(0);
                let token = params.meta.progress_token;
                let run = {
                    let server = Arc::clone(self);
                    let sink = sink.clone();
                    move || {
                        if let Some(t) = &token {
                            for i in 1..=progress {
                                sink.send(Server::progress_line(t, i, progress));
                            }
                        }
                        if delay > 0 {
                            std::thread::sleep(Duration::from_millis(delay));
                        }
                        sink.send(server.echo_line(&id, &args, modern));
                        server.count_call();
                    }
                };
                if delay > 0 {
                    std::thread::spawn(run);
                } else {
                    run();
                }
            }
            other => sink.send(self.error_line(&id, -32601, &format!("method not found: {other}"))),
        }
        true
    }

    fn count_call(&self) {
        let n = self.calls.fetch_add(1, Ordering::AcqRel) + 1;
        if self.cfg.exit_after.is_some_and(|max| n >= max) {
            let _ = io::stdout().flush();
            std::process::exit(0);
        }
    }
}

// ---- stdio ------------------------------------------------------------------

/// Stdout behind a lock; flushed when the reader has no more input buffered
/// (so a burst of pipelined requests is answered in few writes), and always
/// by a delayed call's thread.
#[derive(Clone)]
struct StdoutSink {
    out: Arc<Mutex<BufWriter<io::Stdout>>>,
    /// false while the reader still has buffered requests to answer.
    flush_now: Arc<std::sync::atomic::AtomicBool>,
}

impl Sink for StdoutSink {
    fn send(&self, line: Vec<u8>) {
        let mut w = self.out.lock().unwrap();
        if w.write_all(&line).is_err() {
            std::process::exit(0);
        }
        let on_reader = std::thread::current().name() == Some("main");
        if !on_reader || self.flush_now.load(Ordering::Acquire) {
            if w.flush().is_err() {
                std::process::exit(0);
            }
        }
    }
}

fn serve_stdio(server: Arc<Server>) {
    let sink = StdoutSink {
        out: Arc::new(Mutex::new(BufWriter::with_capacity(
            256 * 1024,
            io::stdout(),
        ))),
        flush_now: Arc::new(std::sync::atomic::AtomicBool::new(true)),
    };
    let mut r = BufReader::with_capacity(256 * 1024, io::stdin());
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let more_buffered = !r.buffer().is_empty();
        sink.flush_now.store(!more_buffered, Ordering::Release);
        let msg: Msg = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                sink.send(server.error_line(&Value::Null, -32700, &format!("parse error: {e}")));
                continue;
            }
        };
        server.handle(msg, &sink);
        if !more_buffered {
            let _ = sink.out.lock().unwrap().flush();
        }
    }
    let _ = sink.out.lock().unwrap().flush();
}

// ---- Streamable HTTP (JSON responses) ---------------------------------------

/// Collects the one reply to a POSTed request.
#[derive(Clone)]
struct OneShot(Arc<(Mutex<Vec<Vec<u8>>>, std::sync::Condvar)>);

impl Sink for OneShot {
    fn send(&self, line: Vec<u8>) {
        let (m, cv) = &*self.0;
        m.lock().unwrap().push(line);
        cv.notify_all();
    }
}

impl OneShot {
    /// Waits for the response (skipping progress, which a JSON body cannot carry).
    fn wait_response(&self) -> Vec<u8> {
        let (m, cv) = &*self.0;
        let mut g = m.lock().unwrap();
        loop {
            while let Some(line) = g.pop() {
                if !line.starts_with(br#"{"jsonrpc":"2.0","method""#) {
                    return line;
                }
            }
            g = cv.wait(g).unwrap();
        }
    }
}

fn respond(
    w: &mut impl Write,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

fn serve_connection(
    server: Arc<Server>,
    stream: TcpStream,
    sessions: Arc<AtomicU64>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut r = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
    let mut w = BufWriter::with_capacity(64 * 1024, stream);
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let request_line = line.trim_end().to_owned();
        if request_line.is_empty() {
            continue;
        }
        let mut parts = request_line.split(' ');
        let method = parts.next().unwrap_or("").to_owned();
        // Only the two headers the server acts on are kept: a map of every
        // header (lower-cased copies of each name and value) was work that
        // grew with the client's headers, and the 2026-07-28 era sends more.
        let mut len = 0usize;
        let mut close = false;
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let h = line.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let k = k.trim();
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                } else if k.eq_ignore_ascii_case("connection") {
                    close = v.trim().eq_ignore_ascii_case("close");
                }
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body)?;
        match method.as_str() {
            "POST" => {
                let msg: Msg = match serde_json::from_slice(&body) {
                    Ok(v) => v,
                    Err(e) => {
                        respond(
                            &mut w,
                            "400 Bad Request",
                            &[("Content-Type", "text/plain")],
                            e.to_string().as_bytes(),
                        )?;
                        continue;
                    }
                };
                let is_init = msg.method.as_deref() == Some("initialize");
                let sink = OneShot(Arc::new((
                    Mutex::new(Vec::new()),
                    std::sync::Condvar::new(),
                )));
                if server.handle(msg, &sink) {
                    let mut resp = sink.wait_response();
                    if resp.last() == Some(&b'\n') {
                        resp.pop();
                    }
                    let sid;
                    let mut hs = vec![("Content-Type", "application/json")];
                    if is_init {
                        sid = format!("echo-{}", sessions.fetch_add(1, Ordering::Relaxed) + 1);
                        hs.push(("Mcp-Session-Id", sid.as_str()));
                    }
                    respond(&mut w, "200 OK", &hs, &resp)?;
                } else {
                    respond(&mut w, "202 Accepted", &[], b"")?;
                }
            }
            "GET" => respond(
                &mut w,
                "405 Method Not Allowed",
                &[("Allow", "POST, DELETE")],
                b"",
            )?,
            "DELETE" => respond(&mut w, "200 OK", &[], b"")?,
            _ => respond(
                &mut w,
                "405 Method Not Allowed",
                &[("Allow", "POST, DELETE")],
                b"",
            )?,
        }
        if close {
            return Ok(());
        }
    }
}

fn serve_http(server: Arc<Server>, addr: &str) {
    let listener = TcpListener::bind(addr).unwrap_or_else(|e| {
        eprintln!("echo-server: cannot bind {addr}: {e}");
        std::process::exit(1)
    });
    let local = listener.local_addr().expect("bound");
    println!("listening http://{local}/mcp");
    let _ = io::stdout().flush();
    let sessions = Arc::new(AtomicU64::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let server = Arc::clone(&server);
        let sessions = Arc::clone(&sessions);
        std::thread::spawn(move || {
            let _ = serve_connection(server, stream, sessions);
        });
    }
}

fn main() {
    let cfg = config();
    let http = cfg.http.clone();
    let tools = tools_json(cfg.tools);
    let tools_modern = if cfg.modern_results {
        format!(
            r#"{{"resultType":"complete","ttlMs":0,"cacheScope":"private",{}"#,
            &tools[1..]
        )
    } else {
        String::new()
    };
    let server = Arc::new(Server {
        cfg,
        calls: AtomicU64::new(0),
        tools,
        tools_modern,
    });
    match http {
        Some(addr) => serve_http(server, &addr),
        None => serve_stdio(server),
    }
}
