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
use skald_mcp::manager::MediaStore;
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

/// The widest the tools table's name column grows; a longer name is
/// printed on a line of its own above its row.
const TOOL_NAME_COLUMN_MAX: usize = 40;

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

/// Writes a log file's bytes, cleaned like [`out!`]; a closed pipe ends the
/// program quietly (`skald-mcp logs x | head`).
fn write_raw(buf: &[u8]) {
    use std::io::Write;
    if buf.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(buf);
    let mut o = std::io::stdout();
    if let Err(e) = o
        .write_all(term::clean(&text).as_bytes())
        .and_then(|_| o.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
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

fn options(g: &Global, store: Option<&Store>, logs: &LogPrinter) -> ClientOptions {
    let mut o = ClientOptions::default()
        .start_timeout(g.timeout.unwrap_or(CLI_START_TIMEOUT))
        .elicitation_handler(term::TerminalElicitation)
        .logs(logs.sender());
    if let Some(level) = g.log_level {
        // The modern era asks per request; `connect` below sends
        // `logging/setLevel` to a legacy server.
        o.log_level = Some(level);
    }
    if let Some(t) = g.timeout {
        o = o.call_timeout(t);
    }
    if g.inherit_env {
        o = o.inherit_env(true);
    }
    if let Some(s) = store {
        o = o.notifications(s.events_sender());
    }
    o
}

/// The servers' log lines: records (`notifications/message`) are shown on
/// stderr as they come, unless `-q`; every line also goes on to the store
/// (the server's log file) when there is one.
struct LogPrinter {
    tx: skald_mcp::McpLogTx,
    stop: crossbeam_channel::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LogPrinter {
    fn start(g: &Global, store: Option<skald_mcp::McpLogTx>) -> LogPrinter {
        let (quiet, least) = (g.quiet, g.log_level);
        let (tx, rx) = crossbeam_channel::unbounded::<skald_mcp::McpLogLine>();
        let (stop, stop_rx) = crossbeam_channel::bounded::<()>(1);
        let handle = move |l: skald_mcp::McpLogLine| {
            if !quiet {
                if let skald_mcp::LogTag::Level(level) = l.tag {
                    if least.is_none_or(|least| level >= least) {
                        err!("[{}] {level}: {}", l.server, l.text);
                    }
                }
            }
            if let Some(s) = &store {
                let _ = s.send(l);
            }
        };
        let thread = std::thread::Builder::new()
            .name("skald-mcp-logs".into())
            .spawn(move || loop {
                crossbeam_channel::select! {
                    recv(rx) -> l => match l {
                        Ok(l) => handle(l),
                        Err(_) => return,
                    },
                    recv(stop_rx) -> _ => {
                        // What was sent before the stop is still shown.
                        rx.try_iter().for_each(&handle);
                        return;
                    }
                }
            })
            .ok();
        LogPrinter { tx, stop, thread }
    }

    fn sender(&self) -> skald_mcp::McpLogTx {
        self.tx.clone()
    }

    /// Shows (and hands on) every line received so far, then stops.
    fn finish(mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Connects; an HTTP server without an `api_key` may ask for OAuth, which
/// runs through the browser (the URL is printed, the redirect comes back to
/// a loopback port) and keeps its tokens in the database when there is one.
fn connect(
    cfg: &McpServerConfig,
    mut opts: ClientOptions,
    store: Option<&Store>,
    log_level: Option<skald_mcp::LogLevel>,
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
    if let Some(level) = log_level {
        // A server without the logging capability says so; the call goes on.
        if let Err(e) = client.set_logging_level(level) {
            ::log::info!("{}: logging/setLevel {level}: {e}", cfg.name);
        }
    }
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
            if let Target::Config { .. } = target {
                return Err(Failure::Usage(
                    "add takes `-- COMMAND` or `--url URL`; use `import FILE` for a config file"
                        .into(),
                ));
            }
            let mut cfg = config_of_target(&name, target)?;
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
        Cmd::Import { file, replace } => import(&g, &file, replace),
        Cmd::OnServer { server, verb } => {
            let store = open_store(&g)?;
            let logs = LogPrinter::start(&g, Some(store.log_sender()));
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
                let client = match connect(
                    &cfg,
                    options(&g, Some(&store), &logs),
                    Some(&store),
                    g.log_level,
                ) {
                    Ok(c) => c,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                };
                if names.len() > 1 && !g.json {
                    out!("== {name}");
                }
                result = run_verb(&g, &*client, &verb);
                let _ = client.close();
                if result.is_err() {
                    break;
                }
            }
            logs.finish();
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
        Cmd::Connect {
            target,
            verb,
            env,
            inherit_env,
        } => {
            let mut cfg = config_of_target("direct", target)?;
            cfg.env.extend(env);
            cfg.inherit_env |= inherit_env;
            let logs = LogPrinter::start(&g, None);
            let (ntx, nrx) = crossbeam_channel::unbounded();
            let r = connect(
                &cfg,
                options(&g, None, &logs).notifications(ntx),
                None,
                g.log_level,
            )
            .and_then(|client| {
                let r = run_verb(&g, &*client, &verb);
                let _ = client.close();
                r
            });
            logs.finish();
            if !g.quiet {
                for n in nrx.try_iter() {
                    err!("[notification] {} {}", n.method, n.params);
                }
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
    // A check's log records go to the log files only: the table is the
    // output.
    let quiet = Global {
        quiet: true,
        ..Global::default()
    };
    let logs = LogPrinter::start(&quiet, Some(store.log_sender()));
    let statuses: Vec<(String, String)> = if check {
        std::thread::scope(|s| {
            let handles: Vec<_> = rows
                .iter()
                .map(|c| {
                    let opts = options(g, Some(&store), &logs);
                    let store_ref = &store;
                    s.spawn(move || {
                        if !c.enabled {
                            return ("disabled".to_owned(), String::new());
                        }
                        match connect(c, opts, Some(store_ref), None).and_then(|cl| {
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
    logs.finish();
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
                    // The definitions as the server wrote them.
                    format_args!(
                        "[{}]",
                        tools
                            .iter()
                            .map(|t| t.raw_json())
                            .collect::<Vec<_>>()
                            .join(",")
                    )
                );
                return Ok(());
            }
            let name_width = tools
                .iter()
                .map(|t| t.name.chars().count())
                .filter(|&n| n <= TOOL_NAME_COLUMN_MAX)
                .max()
                .unwrap_or(0)
                .max(12);
            let title_of = |t: &skald_mcp::McpTool| {
                t.title
                    .clone()
                    .or_else(|| t.annotations.title.clone())
                    .unwrap_or_default()
            };
            // No title column when no tool has a title.
            let title_width = tools
                .iter()
                .map(|t| title_of(t).chars().count())
                .max()
                .unwrap_or(0)
                .min(20);
            let row = |name: &str, title: &str, desc: &str, hints: &str| {
                if title_width == 0 {
                    out!("{name:<name_width$} {}{hints}", truncate(desc, 70));
                } else {
                    out!(
                        "{name:<name_width$} {:<title_width$} {}{hints}",
                        truncate(title, title_width),
                        truncate(desc, 70)
                    );
                }
            };
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
                let title = title_of(t);
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
                // The name column is as wide as the longest name (up to
                // a cap; a longer name gets its own line), so long names
                // neither push the columns out of line nor get cut: a
                // name is what a person types back into `call`.
                if t.name.chars().count() > name_width {
                    out!("{}", t.name);
                    row("", &title, desc, &hints);
                } else {
                    row(&t.name, &title, desc, &hints);
                }
            }
            Ok(())
        }
        Verb::Call {
            tool,
            arguments,
            raw_args,
        } => call(g, c, tool, arguments, raw_args),
        Verb::Prompt { name, args } => {
            let pairs: Vec<(&str, &str)> =
                args.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let r = c.get_prompt(name, &pairs)?;
            if g.json {
                let messages: Vec<Value> = r
                    .messages
                    .iter()
                    .map(|m| {
                        let content = match &m.content {
                            skald_mcp::PromptContent::Text(t) => json!({"type": "text", "text": t}),
                            skald_mcp::PromptContent::Media(media) => {
                                json!({"type": media.kind(), "mimeType": media.mime_type(),
                                       "bytes": media.bytes().map_or(0, <[u8]>::len)})
                            }
                        };
                        json!({"role": role_name(m.role), "content": content})
                    })
                    .collect();
                out!(
                    "{}",
                    json!({"description": r.description, "messages": messages})
                );
                return Ok(());
            }
            if let Some(d) = &r.description {
                out!("# {d}");
            }
            let media = media_store(g);
            for m in r.messages {
                let body = match m.content {
                    skald_mcp::PromptContent::Text(t) => t,
                    skald_mcp::PromptContent::Media(item) => media
                        .persist(McpCallResult::Media {
                            text: String::new(),
                            structured: None,
                            items: vec![item],
                        })?
                        .to_wire(),
                };
                out!("[{}] {body}", role_name(m.role));
            }
            Ok(())
        }
        Verb::Rpc { method, params } => {
            let r = c.request(method, params.clone(), &CallOptions::new())?;
            out!(
                "{}",
                if g.json {
                    r.to_string()
                } else {
                    serde_json::to_string_pretty(&r).unwrap_or_default()
                }
            );
            Ok(())
        }
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
                    ResourceContents::Text { text, .. } if !g.json => {
                        out!("{}", text.strip_suffix('\n').unwrap_or(&text))
                    }
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

fn role_name(r: skald_mcp::Role) -> &'static str {
    match r {
        skald_mcp::Role::User => "user",
        skald_mcp::Role::Assistant => "assistant",
    }
}

fn call(
    g: &Global,
    c: &dyn McpServerClient,
    tool: &str,
    arguments: &Value,
    raw_args: &[(String, String)],
) -> Res {
    // Learn the tool's input and output schemas and its task support first.
    let tools = c.list_tools_shared().ok();
    let found = tools
        .as_deref()
        .and_then(|t| t.iter().find(|t| t.name == tool));
    let mut arguments = arguments.as_object().cloned().unwrap_or_default();
    let schema = found.map(|t| t.input_schema_value());
    args::type_args(schema.as_ref(), raw_args, &mut arguments)?;
    let tty = term::stderr_is_tty();
    let mut opts = CallOptions::new();
    if tty && !g.quiet {
        opts = opts.on_progress(term::draw_progress);
    } else if !g.quiet {
        // Not a terminal: one line per update, nothing redrawn.
        opts = opts.on_progress(|p: &skald_mcp::Progress| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = p.message.as_deref().unwrap_or("");
            err!("[progress] {}{total} {msg}", p.progress);
        });
    }
    let outcome = c.call_tool_with(tool, Value::Object(arguments), &opts);
    if tty && !g.quiet {
        term::clear_progress();
    }
    match outcome {
        Ok(r) => {
            print_result(g, r, found.and_then(|t| t.output_schema.as_deref()))?;
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

/// Structured content as a person reads it: the conventional
/// `{"result": …}` wrapper of a tool whose output is a plain value
/// (FastMCP's `-> int`) unwrapped, a string as it is, else pretty JSON.
fn show_structured(value: &Value, output_schema: Option<&Value>) -> String {
    let wrapped = output_schema.is_none_or(|s| {
        s.get("x-fastmcp-wrap-result") == Some(&Value::Bool(true))
            || s.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.len() == 1 && p.contains_key("result"))
    });
    let inner = match value.as_object() {
        Some(m) if wrapped && m.len() == 1 => m.get("result").unwrap_or(value),
        _ => value,
    };
    match inner {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// Replaces every string of `v` that is the base64 of a saved media item
/// by the file it was saved to: a server that mirrors its image in
/// `structuredContent` must not put the image's bytes on the terminal.
fn without_media_bytes(v: &mut Value, saved: &[(String, String)]) {
    match v {
        Value::String(s) if s.len() >= 64 => {
            let plain = s.trim();
            let body = plain.split_once(";base64,").map_or(plain, |(_, b)| b);
            if let Some((_, path)) = saved.iter().find(|(b64, _)| b64 == body) {
                *s = format!("<saved to {path}>");
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| without_media_bytes(x, saved)),
        Value::Object(m) => m.values_mut().for_each(|x| without_media_bytes(x, saved)),
        _ => {}
    }
}

/// Whether structured content only repeats the content blocks
/// (`{"content": [{"type": "image", …}]}`, as the filesystem server's
/// `read_media_file` sends): shown, it would say nothing the saved files'
/// lines do not.
fn mirrors_content(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.len() == 1
            && m.get("content").and_then(Value::as_array).is_some_and(|a| {
                a.iter()
                    .all(|b| b.get("type").is_some_and(Value::is_string))
            })
    })
}

/// The path inside a reference line (`![image](PATH) (…)`).
fn path_of(reference: &str) -> Option<String> {
    reference
        .split_once("](")
        .and_then(|(_, rest)| rest.split_once(") ").or_else(|| rest.rsplit_once(')')))
        .map(|(p, _)| p.to_owned())
}

fn print_result(g: &Global, r: McpCallResult, output_schema: Option<&Value>) -> Res {
    use base64::Engine as _;
    let media = media_store(g);
    // Each media item saved to a file: its reference line, its path and
    // its base64 (to keep it off the terminal).
    let save = |items: Vec<McpMedia>| -> Res<Vec<(McpMedia, String, Option<String>)>> {
        let mut out = Vec::new();
        for item in items {
            let line = media
                .persist(McpCallResult::Media {
                    text: String::new(),
                    structured: None,
                    items: vec![item.clone()],
                })?
                .to_wire();
            let path = match &item {
                McpMedia::ResourceLink { .. } => None,
                _ => path_of(&line),
            };
            out.push((item, line, path));
        }
        Ok(out)
    };
    // A text's own final newline is not doubled by the line's.
    let text_line = |t: &str| t.strip_suffix('\n').unwrap_or(t).to_owned();
    if !g.json {
        match r {
            McpCallResult::Text(t) => out!("{}", text_line(&t)),
            // Text first: it is what the server wrote for a reader.
            McpCallResult::Json { value, text } if text.trim().is_empty() => {
                out!("{}", show_structured(&value, output_schema))
            }
            McpCallResult::Json { text, .. } => out!("{}", text_line(&text)),
            McpCallResult::Media {
                text,
                structured,
                items,
            } => {
                let saved = save(items)?;
                if !text.trim().is_empty() {
                    out!("{}", text_line(&text));
                } else if let Some(mut v) = structured.filter(|v| !mirrors_content(v)) {
                    let bytes: Vec<(String, String)> = saved
                        .iter()
                        .filter_map(|(item, _, path)| {
                            Some((
                                base64::engine::general_purpose::STANDARD.encode(item.bytes()?),
                                path.clone()?,
                            ))
                        })
                        .collect();
                    without_media_bytes(&mut v, &bytes);
                    out!("{}", show_structured(&v, output_schema));
                }
                for (_, line, _) in &saved {
                    out!("{line}");
                }
            }
            other => out!("{}", other.to_text()),
        }
        return Ok(());
    }
    let out = match r {
        McpCallResult::Text(t) => json!({"type": "text", "text": t}),
        McpCallResult::Json { value, text } => {
            json!({"type": "json", "value": value, "text": text})
        }
        McpCallResult::Media {
            text,
            structured,
            items,
        } => {
            let out_items: Vec<Value> = save(items)?
                .into_iter()
                .map(|(item, _, path)| match &item {
                    McpMedia::ResourceLink { uri, mime_type, .. } => {
                        json!({"kind": item.kind(), "uri": uri, "mime_type": mime_type})
                    }
                    other => json!({"kind": other.kind(), "mime_type": other.mime_type(),
                                    "bytes": other.bytes().map_or(0, <[u8]>::len), "path": path}),
                })
                .collect();
            json!({"type": "media", "text": text, "structured": structured, "items": out_items})
        }
        other => json!({"type": "text", "text": other.to_text()}),
    };
    out!("{out}");
    Ok(())
}

/// Reads an `mcpServers` file.
fn read_config_file(file: &str) -> Res<skald_mcp::ImportedServers> {
    let text = std::fs::read_to_string(file).map_err(|source| McpError::Io {
        context: format!("reading {file}"),
        source,
    })?;
    skald_mcp::parse_mcp_servers_json(&text).map_err(|e| match e {
        McpError::Config { message, .. } => Failure::Usage(format!("{file}: {message}")),
        other => Failure::Mcp(other),
    })
}

/// The configuration a target names: a `-- COMMAND` or `--url URL` gets
/// `name`; a `--config FILE` entry keeps its own name from the file.
fn config_of_target(name: &str, target: Target) -> Res<McpServerConfig> {
    Ok(match target {
        Target::Command(c) => McpServerConfig::stdio(name, &c[0], c[1..].to_vec()),
        Target::Url {
            url,
            api_key,
            sse,
            headers,
        } => {
            let mut h = if sse {
                McpServerConfig::sse(name, url)
            } else {
                McpServerConfig::http(name, url)
            };
            h.api_key = api_key;
            h.headers = headers.into_iter().collect();
            h
        }
        Target::Config { file, server } => from_config_file(&file, server.as_deref())?,
    })
}

/// `connect --config FILE [--server NAME]`: the named entry, or the only one.
fn from_config_file(file: &str, server: Option<&str>) -> Res<McpServerConfig> {
    let found = read_config_file(file)?;
    let names = || {
        let mut n: Vec<&str> = found.servers.iter().map(|c| c.name.as_str()).collect();
        n.extend(found.skipped.iter().map(|s| s.name.as_str()));
        n.join(", ")
    };
    let pick = match server {
        Some(name) => name.to_owned(),
        None if found.servers.len() + found.skipped.len() == 1 => found
            .servers
            .first()
            .map(|c| c.name.clone())
            .or_else(|| found.skipped.first().map(|s| s.name.clone()))
            .unwrap_or_default(),
        None => {
            return Err(Failure::Usage(format!(
                "{file} has {} servers ({}): choose one with --server NAME",
                found.servers.len() + found.skipped.len(),
                names()
            )))
        }
    };
    if let Some(s) = found.skipped.iter().find(|s| s.name == pick) {
        return Err(Failure::Usage(format!(
            "{file}: server {pick:?} cannot be used: {}",
            s.reason
        )));
    }
    found
        .servers
        .iter()
        .find(|c| c.name == pick)
        .cloned()
        .ok_or_else(|| {
            Failure::Usage(format!(
                "{file} has no server {pick:?} (it has: {})",
                names()
            ))
        })
}

/// `import FILE`: stores each entry of an `mcpServers` file, and says what
/// it added, replaced or skipped and why. Skipped entries do not fail the
/// command (the others are still stored); a file that is not such a file
/// does.
fn import(g: &Global, file: &str, replace: bool) -> Res {
    let found = read_config_file(file)?;
    let store = open_store(g)?;
    let mut report = Vec::new();
    for cfg in &found.servers {
        let exists = store.get_server(&cfg.name)?.is_some();
        if exists && !replace {
            report.push((
                cfg.name.clone(),
                "skipped",
                "a server of that name is stored already (--replace overwrites it)".to_owned(),
            ));
            continue;
        }
        store.upsert_server(cfg)?;
        let what = format!(
            "{}: {}{}",
            cfg.transport,
            target_of(cfg),
            if cfg.enabled { "" } else { " (disabled)" }
        );
        report.push((
            cfg.name.clone(),
            if exists { "replaced" } else { "added" },
            what,
        ));
    }
    for s in &found.skipped {
        report.push((s.name.clone(), "skipped", s.reason.clone()));
    }
    if g.json {
        let v: Vec<Value> = report
            .iter()
            .map(|(n, what, why)| json!({"name": n, "action": what, "detail": why}))
            .collect();
        out!("{}", Value::Array(v));
    } else {
        for (n, what, why) in &report {
            out!("{what:<8} {n}: {why}");
        }
        let stored = report.iter().filter(|r| r.1 != "skipped").count();
        out!("{stored} of {} servers from {file} stored", report.len());
    }
    Ok(store.close()?)
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
            write_raw(&buf);
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
            write_raw(&buf);
            pos = p;
        }
    }
    Ok(())
}
