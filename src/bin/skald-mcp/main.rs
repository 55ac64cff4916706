//! `skald-mcp`: poke at MCP servers from a shell.
//!
//! Stored servers live in the same SQLite database the manager uses;
//! `connect` talks to a server directly, without it. See `--help`.

mod args;
mod term;

/// `println!` with what a server controls made harmless on a terminal:
/// control characters (ESC, BEL, NUL, …; not newline and tab) are shown as
/// `\u{..}` instead of being written raw, so a server cannot retitle the
/// window, clear the screen or forge output.
macro_rules! out {
    ($($t:tt)*) => {
        crate::write_line(&mut std::io::stdout(), &crate::term::clean(&format!($($t)*)))
    };
}

/// `eprintln!`, cleaned like [`out!`].
macro_rules! err {
    ($($t:tt)*) => {
        crate::write_line(&mut std::io::stderr(), &crate::term::clean(&format!($($t)*)))
    };
}

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use args::{Cmd, Global, Target, Usage, Verb};
use parking_lot::Mutex;
use serde_json::{json, Value};
use skald_mcp::manager::{MediaStore, ToolResult};
use skald_mcp::store::{Store, StoreConfig};
use skald_mcp::{
    CallOptions, ClientOptions, McpCallResult, McpError, McpMedia, McpServerClient,
    McpServerConfig, McpTransport, ResourceContents,
};

/// Exit codes.
const EXIT_TOOL_ERROR: u8 = 1;
const EXIT_USAGE: u8 = 2;
const EXIT_CONNECTION: u8 = 3;
const EXIT_INTERRUPTED: u8 = 130;

/// How long a CLI connection may take to start (shorter than the library's
/// default: a person is waiting).
const CLI_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Clients to close when a signal arrives.
static ACTIVE: Mutex<Vec<Arc<dyn McpServerClient>>> = Mutex::new(Vec::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Why the command failed.
enum Failure {
    Usage(String),
    Mcp(McpError),
}

impl From<McpError> for Failure {
    fn from(e: McpError) -> Self {
        Failure::Mcp(e)
    }
}

impl From<Usage> for Failure {
    fn from(u: Usage) -> Self {
        Failure::Usage(u.0)
    }
}

type Res<T = ()> = Result<T, Failure>;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    install_signal_handler();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let outcome = args::parse(argv)
        .map_err(Failure::from)
        .and_then(|(g, cmd)| run(g, cmd));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) if INTERRUPTED.load(Ordering::Acquire) => {
            err!("skald-mcp: interrupted");
            ExitCode::from(EXIT_INTERRUPTED)
        }
        Err(Failure::Usage(m)) => {
            err!("skald-mcp: {m}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Mcp(e)) => {
            err!("skald-mcp: {}", one_line(&e.to_string()));
            ExitCode::from(match e {
                McpError::Tool { .. } => EXIT_TOOL_ERROR,
                McpError::Config { .. } | McpError::InvalidInput { .. } => EXIT_USAGE,
                _ => EXIT_CONNECTION,
            })
        }
    }
}

/// The exit status when stdout is closed under us (`skald-mcp tools x |
/// head`): what a shell shows for a process ended by SIGPIPE.
const EXIT_BROKEN_PIPE: i32 = 128 + libc::SIGPIPE;

/// Writes one line; a closed pipe (the reader went away) ends the program
/// quietly — open clients are closed first, so no server is left behind —
/// where `println!` would panic.
fn write_line(w: &mut impl std::io::Write, line: &str) {
    if let Err(e) = writeln!(w, "{line}").and_then(|_| w.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            let clients: Vec<_> = ACTIVE.lock().drain(..).collect();
            for c in clients {
                let _ = c.close();
            }
            std::process::exit(EXIT_BROKEN_PIPE);
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Ctrl+C / SIGTERM: close every open client (its children are killed and
/// in-flight calls fail), so `main` unwinds normally and the store drains.
fn install_signal_handler() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("skald-mcp-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                INTERRUPTED.store(true, Ordering::Release);
                let clients: Vec<_> = ACTIVE.lock().drain(..).collect();
                for c in clients {
                    let _ = c.close();
                }
            }
        });
}

fn data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("skald-mcp");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/skald-mcp")
}

fn db_path(g: &Global) -> PathBuf {
    if let Some(p) = &g.db {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("SKALD_MCP_DB").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    data_dir().join("mcp.db")
}

fn base_dir(db: &Path) -> PathBuf {
    db.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn open_store(g: &Global) -> Res<Store> {
    let db = db_path(g);
    let dir = base_dir(&db);
    std::fs::create_dir_all(&dir).map_err(|source| McpError::Io {
        context: format!("creating {}", dir.display()),
        source,
    })?;
    // The store writes `<root>/logs/mcp/<name>.log`: the root is the data
    // directory itself.
    Ok(Store::open(StoreConfig::new(&db, &dir))?)
}

fn media_store(g: &Global) -> MediaStore {
    let dir = g
        .media_dir
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| base_dir(&db_path(g)).join("mcp_media"));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let prefix = dir.display().to_string();
    MediaStore::new(dir, prefix)
}

fn options(g: &Global, store: Option<&Store>) -> ClientOptions {
    let mut o = ClientOptions::default()
        .start_timeout(g.timeout.unwrap_or(CLI_START_TIMEOUT))
        .elicitation_handler(term::TerminalElicitation);
    if let Some(t) = g.timeout {
        o = o.call_timeout(t);
    }
    if g.inherit_env {
        o = o.inherit_env(true);
    }
    if let Some(s) = store {
        o = o.notifications(s.events_sender()).logs(s.log_sender());
    }
    o
}

/// Connects; an HTTP server without an `api_key` may ask for OAuth, which
/// runs through the browser (the URL is printed, the redirect comes back to
/// a loopback port) and keeps its tokens in the database when there is one.
fn connect(
    cfg: &McpServerConfig,
    mut opts: ClientOptions,
    store: Option<&Store>,
) -> Res<Arc<dyn McpServerClient>> {
    if cfg.transport == McpTransport::Http && cfg.api_key.is_none() {
        // SKALD_MCP_OAUTH_HEADLESS=1: follow the authorization URL without a
        // browser (servers that approve automatically, tests).
        let headless = std::env::var_os("SKALD_MCP_OAUTH_HEADLESS").is_some_and(|v| v == "1");
        let authorizer: Arc<dyn skald_mcp::auth::AuthorizationHandler> = if headless {
            Arc::new(skald_mcp::auth::HeadlessAuthorizer::default())
        } else {
            Arc::new(skald_mcp::auth::LoopbackAuthorizer::default())
        };
        let mut oauth = skald_mcp::auth::OAuthOptions {
            authorizer,
            ..skald_mcp::auth::OAuthOptions::default()
        };
        if let Some(s) = store {
            oauth.token_store = Arc::new(s.handle());
        }
        opts.oauth = Some(oauth);
    }
    // The era (and HTTP transport) the server spoke last time is tried
    // first.
    if let (Some(s), None) = (store, opts.era_hint) {
        opts.era_hint = s.server_era(&cfg.name).ok().flatten().map(|(e, _)| e);
    }
    if let (Some(s), None, McpTransport::Http) = (store, opts.wire_hint, cfg.transport) {
        opts.wire_hint = s.server_wire(&cfg.name).ok().flatten();
    }
    let client = skald_mcp::connect(cfg, opts)?;
    if let (Some(s), Ok(info)) = (store, client.initialize()) {
        let _ = s.set_server_era(&cfg.name, info.era, &info.protocol_version);
        if let (McpTransport::Http, Some(wire)) = (cfg.transport, client.transport()) {
            let _ = s.set_server_wire(&cfg.name, wire);
        }
    }
    ACTIVE.lock().push(Arc::clone(&client));
    if INTERRUPTED.load(Ordering::Acquire) {
        let _ = client.close();
    }
    Ok(client)
}

fn run(g: Global, cmd: Cmd) -> Res {
    match cmd {
        Cmd::Help => {
            out!("{}", args::USAGE);
            Ok(())
        }
        Cmd::Version => {
            out!("skald-mcp {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Cmd::Add {
            name,
            target,
            env,
            inherit_env,
            description,
            friendly_name,
            disabled,
        } => {
            let mut cfg = match target {
                Target::Command(c) => McpServerConfig::stdio(&name, &c[0], c[1..].to_vec()),
                Target::Url { url, api_key } => {
                    let mut h = McpServerConfig::http(&name, url);
                    h.api_key = api_key;
                    h
                }
            };
            cfg.env = env.into_iter().collect();
            cfg.inherit_env = inherit_env;
            cfg.description = description;
            cfg.friendly_name = friendly_name;
            cfg.enabled = !disabled;
            let store = open_store(&g)?;
            store.upsert_server(&cfg)?;
            out!("added {name} ({})", cfg.transport);
            Ok(store.close()?)
        }
        Cmd::List { check } => list(&g, check),
        Cmd::Remove { name } => {
            let store = open_store(&g)?;
            if !store.delete_server(&name)? {
                return Err(Failure::Usage(format!("no server named {name:?}")));
            }
            out!("removed {name}");
            Ok(store.close()?)
        }
        Cmd::SetEnabled { name, enabled } => {
            let store = open_store(&g)?;
            if !store.set_enabled(&name, enabled)? {
                return Err(Failure::Usage(format!("no server named {name:?}")));
            }
            out!("{} {name}", if enabled { "enabled" } else { "disabled" });
            Ok(store.close()?)
        }
        Cmd::OnServer { server, verb } => {
            let store = open_store(&g)?;
            let names: Vec<String> = match server {
                Some(s) => vec![s],
                None => store
                    .list_servers()?
                    .into_iter()
                    .filter(|c| c.enabled)
                    .map(|c| c.name)
                    .collect(),
            };
            let mut result = Ok(());
            for name in &names {
                let cfg = store.get_server(name)?.ok_or_else(|| {
                    Failure::Usage(format!("no server named {name:?} (see `skald-mcp list`)"))
                })?;
                let client = connect(&cfg, options(&g, Some(&store)), Some(&store))?;
                if names.len() > 1 && !g.json {
                    out!("== {name}");
                }
                result = run_verb(&g, &*client, &verb);
                let _ = client.close();
                if result.is_err() {
                    break;
                }
            }
            store.close()?;
            result
        }
        Cmd::Events { pending, limit } => {
            let store = open_store(&g)?;
            let events = if pending {
                store.pending_events(limit)?
            } else {
                store.recent_events(limit)?
            };
            for e in &events {
                if g.json {
                    out!(
                        "{}",
                        json!({"id": e.id.0, "server": e.server, "method": e.method, "params": e.params,
                               "status": e.status.as_str(), "received_at": rfc3339(e.received_at)})
                    );
                } else {
                    out!(
                        "#{:<5} {} {:<10} {:<9} {} {}",
                        e.id.0,
                        rfc3339(e.received_at),
                        e.server,
                        e.status.as_str(),
                        e.method,
                        e.params
                    );
                }
            }
            Ok(store.close()?)
        }
        Cmd::Logs { server, follow } => logs(&g, &server, follow),
        Cmd::Connect { target, verb } => {
            let cfg = match target {
                Target::Command(c) => McpServerConfig::stdio("direct", &c[0], c[1..].to_vec()),
                Target::Url { url, api_key } => {
                    let mut h = McpServerConfig::http("direct", url);
                    h.api_key = api_key;
                    h
                }
            };
            let (ntx, nrx) = crossbeam_channel::unbounded();
            let client = connect(&cfg, options(&g, None).notifications(ntx), None)?;
            let r = run_verb(&g, &*client, &verb);
            let _ = client.close();
            for n in nrx.try_iter() {
                err!("[notification] {} {}", n.method, n.params);
            }
            r
        }
    }
}

fn rfc3339(t: std::time::SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn list(g: &Global, check: bool) -> Res {
    let store = open_store(g)?;
    let rows = store.list_servers()?;
    let statuses: Vec<(String, String)> = if check {
        std::thread::scope(|s| {
            let handles: Vec<_> = rows
                .iter()
                .map(|c| {
                    let opts = options(g, Some(&store));
                    let store_ref = &store;
                    s.spawn(move || {
                        if !c.enabled {
                            return ("disabled".to_owned(), String::new());
                        }
                        match connect(c, opts, Some(store_ref)).and_then(|cl| {
                            let n = cl.list_tools_shared().map_err(Failure::from)?.len();
                            let info = cl.initialize().map_err(Failure::from)?;
                            let _ = cl.close();
                            Ok((n, info))
                        }) {
                            Ok((n, info)) => (
                                format!(
                                    "connected ({} era, protocol {})",
                                    info.era, info.protocol_version
                                ),
                                n.to_string(),
                            ),
                            Err(Failure::Mcp(e)) => (
                                format!("failed: {}", one_line(&e.to_string())),
                                String::new(),
                            ),
                            Err(Failure::Usage(m)) => (format!("failed: {m}"), String::new()),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    } else {
        Vec::new()
    };
    // The era each server spoke when it last connected (re-read: a check
    // above may just have recorded it).
    let eras: Vec<Option<(skald_mcp::Era, Option<String>)>> = rows
        .iter()
        .map(|c| store.server_era(&c.name).ok().flatten())
        .collect();
    // What each `http` server was found to speak: `http/sse` when the
    // fallback to HTTP+SSE was taken.
    let shown_transport = |c: &McpServerConfig| -> &'static str {
        match (c.transport, store.server_wire(&c.name).ok().flatten()) {
            (McpTransport::Http, Some(McpTransport::Sse)) => "http/sse",
            (t, _) => t.as_str(),
        }
    };
    if g.json {
        let v: Vec<Value> = rows
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let era = eras[i].as_ref();
                json!({"name": c.name, "transport": c.transport.as_str(),
                       "speaks": shown_transport(c), "enabled": c.enabled,
                       "target": target_of(c), "description": c.description, "friendly_name": c.friendly_name,
                       "era": era.map(|e| e.0.as_str()),
                       "protocol_version": era.and_then(|e| e.1.clone()),
                       "status": statuses.get(i).map(|s| s.0.clone()),
                       "tools": statuses.get(i).and_then(|s| s.1.parse::<u64>().ok())})
            })
            .collect();
        out!("{}", Value::Array(v));
    } else if rows.is_empty() {
        out!("no servers (add one with `skald-mcp add NAME -- COMMAND ARGS...`)");
    } else {
        out!(
            "{:<16} {:<9} {:<8} {:<8} {:<40} DESCRIPTION",
            "NAME",
            "TRANSPORT",
            "ENABLED",
            "ERA",
            "TARGET"
        );
        for (i, c) in rows.iter().enumerate() {
            out!(
                "{:<16} {:<9} {:<8} {:<8} {:<40} {}",
                c.name,
                shown_transport(c),
                if c.enabled { "yes" } else { "no" },
                eras[i].as_ref().map_or("-", |e| e.0.as_str()),
                truncate(&target_of(c), 40),
                c.description.as_deref().unwrap_or("")
            );
            if let Some((status, tools)) = statuses.get(i) {
                let tools = if tools.is_empty() {
                    String::new()
                } else {
                    format!(", {tools} tools")
                };
                out!("{:<16} status: {status}{tools}", "");
            }
        }
    }
    Ok(store.close()?)
}

/// What a server runs or where it is: never an env value or an api key.
fn target_of(c: &McpServerConfig) -> String {
    match c.transport {
        McpTransport::Stdio => {
            let mut s = c.command.clone().unwrap_or_default();
            for a in &c.args {
                s.push(' ');
                s.push_str(a);
            }
            s
        }
        McpTransport::Http | McpTransport::Sse => c.url.clone().unwrap_or_default(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn run_verb(g: &Global, c: &dyn McpServerClient, verb: &Verb) -> Res {
    match verb {
        Verb::Tools => {
            let tools = c.list_tools_shared()?;
            if g.json {
                out!(
                    "{}",
                    Value::Array(tools.iter().map(|t| t.raw.clone()).collect())
                );
                return Ok(());
            }
            for t in tools.iter() {
                let a = &t.annotations;
                let mut hints = Vec::new();
                for (on, label) in [
                    (a.read_only_hint, "read-only"),
                    (a.destructive_hint, "destructive"),
                    (a.idempotent_hint, "idempotent"),
                    (a.open_world_hint, "open-world"),
                ] {
                    if on == Some(true) {
                        hints.push(label);
                    }
                }
                if t.task_support.wants_task() {
                    hints.push("task");
                }
                let title = t.title.as_deref().or(a.title.as_deref()).unwrap_or("");
                let desc = t
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("");
                let hints = if hints.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", hints.join(", "))
                };
                out!(
                    "{:<24} {:<20} {}{hints}",
                    t.name,
                    truncate(title, 20),
                    truncate(desc, 70)
                );
            }
            Ok(())
        }
        Verb::Call { tool, arguments } => call(g, c, tool, arguments),
        Verb::Resources => {
            let resources = c.list_resources()?;
            let templates = c.list_resource_templates().unwrap_or_default();
            if g.json {
                out!(
                    "{}",
                    json!({"resources": resources.iter().map(|r| r.raw.clone()).collect::<Vec<_>>(),
                           "templates": templates.iter().map(|t| t.raw.clone()).collect::<Vec<_>>()})
                );
                return Ok(());
            }
            for r in &resources {
                out!(
                    "{:<40} {:<20} {}",
                    r.uri,
                    r.name,
                    r.mime_type.as_deref().unwrap_or("")
                );
            }
            for t in &templates {
                out!("{:<40} {:<20} (template)", t.uri_template, t.name);
            }
            Ok(())
        }
        Verb::Read { uri } => {
            let contents = c.read_resource(uri)?;
            let media = media_store(g);
            for item in contents {
                match item {
                    ResourceContents::Text { text, .. } if !g.json => out!("{text}"),
                    ResourceContents::Text {
                        uri,
                        mime_type,
                        text,
                    } => {
                        out!(
                            "{}",
                            json!({"uri": uri, "mimeType": mime_type, "text": text})
                        )
                    }
                    ResourceContents::Blob {
                        uri,
                        mime_type,
                        data,
                    } => {
                        let r = media.persist(McpCallResult::Media {
                            text: String::new(),
                            structured: None,
                            items: vec![McpMedia::Resource {
                                uri: uri.clone(),
                                mime_type: mime_type.clone(),
                                data: skald_mcp::ResourceData::Blob(data),
                            }],
                        })?;
                        if g.json {
                            out!(
                                "{}",
                                json!({"uri": uri, "mimeType": mime_type, "saved": r.to_wire()})
                            );
                        } else {
                            out!("{}", r.to_wire());
                        }
                    }
                }
            }
            Ok(())
        }
        Verb::Prompts => {
            let prompts = c.list_prompts()?;
            if g.json {
                out!(
                    "{}",
                    Value::Array(prompts.iter().map(|p| p.raw.clone()).collect())
                );
                return Ok(());
            }
            for p in &prompts {
                let args: Vec<String> = p
                    .arguments
                    .iter()
                    .map(|a| {
                        if a.required {
                            a.name.clone()
                        } else {
                            format!("[{}]", a.name)
                        }
                    })
                    .collect();
                out!(
                    "{:<24} {:<30} {}",
                    p.name,
                    args.join(" "),
                    p.description.as_deref().unwrap_or("")
                );
            }
            Ok(())
        }
        Verb::Ping => {
            let t = std::time::Instant::now();
            c.ping()?;
            out!(
                "pong from {} in {:.1} ms",
                c.name(),
                t.elapsed().as_secs_f64() * 1000.0
            );
            Ok(())
        }
    }
}

fn call(g: &Global, c: &dyn McpServerClient, tool: &str, arguments: &Value) -> Res {
    // Learn the tool's task support and output schema first.
    let _ = c.list_tools_shared();
    let tty = term::stderr_is_tty();
    let mut opts = CallOptions::new();
    if tty {
        opts = opts.on_progress(term::draw_progress);
    }
    let outcome = c.call_tool_with(tool, arguments.clone(), &opts);
    if tty {
        term::clear_progress();
    }
    match outcome {
        Ok(r) => {
            print_result(g, r)?;
            Ok(())
        }
        Err(McpError::Tool {
            message,
            result,
            server,
            tool,
        }) if g.json => {
            out!(
                "{}",
                json!({"type": "error", "message": message, "result": result})
            );
            Err(Failure::Mcp(McpError::Tool {
                server,
                tool,
                message,
                result,
            }))
        }
        Err(e) => Err(e.into()),
    }
}

fn print_result(g: &Global, r: McpCallResult) -> Res {
    if !g.json {
        match media_store(g).persist(r)? {
            ToolResult::Text(t) => out!("{t}"),
            ToolResult::Json(v) => {
                out!("{}", serde_json::to_string_pretty(&v).unwrap_or_default())
            }
        }
        return Ok(());
    }
    let out = match r {
        McpCallResult::Text(t) => json!({"type": "text", "text": t}),
        McpCallResult::Json(v) => json!({"type": "json", "value": v}),
        McpCallResult::Media {
            text,
            structured,
            items,
        } => {
            let media = media_store(g);
            let mut out_items = Vec::new();
            for item in items {
                let kind = item.kind();
                let entry = match &item {
                    McpMedia::ResourceLink { uri, mime_type, .. } => {
                        json!({"kind": kind, "uri": uri, "mime_type": mime_type})
                    }
                    other => {
                        let bytes = other.bytes().map_or(0, <[u8]>::len);
                        let mime = other.mime_type().map(str::to_owned);
                        let saved = media.persist(McpCallResult::Media {
                            text: String::new(),
                            structured: None,
                            items: vec![item.clone()],
                        })?;
                        let path = saved
                            .to_wire()
                            .split_once("](")
                            .and_then(|(_, rest)| rest.split_once(')'))
                            .map(|(p, _)| p.to_owned());
                        json!({"kind": kind, "mime_type": mime, "bytes": bytes, "path": path})
                    }
                };
                out_items.push(entry);
            }
            json!({"type": "media", "text": text, "structured": structured, "items": out_items})
        }
        other => json!({"type": "text", "text": other.to_text()}),
    };
    out!("{out}");
    Ok(())
}

fn logs(g: &Global, server: &str, follow: bool) -> Res {
    let root = base_dir(&db_path(g));
    let path = skald_mcp::store::log_file_path(&root, server);
    let read = |from: u64| -> std::io::Result<(Vec<u8>, u64)> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = std::fs::File::open(&path)?;
        let len = f.metadata()?.len();
        let start = if len < from { 0 } else { from }; // rotated: start over
        f.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        let end = start + buf.len() as u64;
        Ok((buf, end))
    };
    let mut pos = match read(0) {
        Ok((buf, pos)) => {
            print!("{}", String::from_utf8_lossy(&buf));
            pos
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && follow => 0,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure::Usage(format!(
                "no log file for {server:?} at {}",
                path.display()
            )))
        }
        Err(source) => {
            return Err(McpError::Io {
                context: format!("reading {}", path.display()),
                source,
            }
            .into())
        }
    };
    while follow && !INTERRUPTED.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(250));
        if let Ok((buf, p)) = read(pos) {
            print!("{}", String::from_utf8_lossy(&buf));
            use std::io::Write;
            let _ = std::io::stdout().flush();
            pos = p;
        }
    }
    Ok(())
}
