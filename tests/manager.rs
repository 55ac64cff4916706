//! The manager against real child servers and a real SQLite file.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use skald_mcp::manager::{GrantScope, Grants, ManagerConfig, McpManager, ServerStatus, ToolResult};
use skald_mcp::{McpError, McpServerConfig};

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn tempdir() -> TempDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "skald-mgr-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

fn config(dir: &TempDir) -> ManagerConfig {
    let mut c = ManagerConfig::in_dir(&dir.0);
    c.client = test_options();
    c
}

fn demo_cfg(name: &str) -> McpServerConfig {
    script_config(name, "demo_mcp_server.py", &[])
}

fn text(r: ToolResult) -> String {
    match r {
        ToolResult::Text(t) => t,
        other => panic!("expected text, got {other:?}"),
    }
}

fn status(m: &McpManager, name: &str) -> ServerStatus {
    m.list()
        .unwrap()
        .into_iter()
        .find(|s| s.name == name)
        .expect("listed")
        .status
}

#[test]
fn register_call_unregister() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    let n = m
        .register(demo_cfg("demo").with_env("SECRET_TOKEN", "s3cr3t-value"))
        .unwrap();
    assert!(n > 10);
    assert_eq!(
        text(
            m.call("mcp__demo__echo", json!({"text": "routed"}))
                .unwrap()
        ),
        "routed"
    );
    let j = m.call("mcp__demo__add", json!({"a": 1, "b": 2})).unwrap();
    assert_eq!(
        (j.kind(), j.to_wire()),
        ("json", r#"{"sum":3}"#.to_string())
    );
    let pid: u32 = text(m.call("mcp__demo__pid", json!({})).unwrap())
        .parse()
        .unwrap();
    assert!(alive(pid));

    let info = m.list().unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].status, ServerStatus::Connected);
    assert_eq!(info[0].tool_count, Some(n));
    assert!(
        !format!("{info:?}").contains("s3cr3t"),
        "an env value leaked into McpServerInfo"
    );
    let listed = m
        .handle_management_tool("list_items", &json!({"type": "mcp"}))
        .unwrap();
    assert!(
        !listed.contains("s3cr3t") && listed.contains("\"connected\""),
        "{listed}"
    );

    assert!(m.unregister("demo").unwrap());
    assert_eq!(proc_state(pid), None, "the child outlived unregister");
    assert!(m.call("mcp__demo__echo", json!({"text": "x"})).is_err());
    assert!(m.list().unwrap().is_empty());
    assert!(!m.unregister("demo").unwrap());
    m.close().unwrap();
}

#[test]
fn bad_names_are_refused() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    for bad in ["a__b", "_x", "config", "a/b"] {
        assert!(
            matches!(m.register(demo_cfg(bad)), Err(McpError::Config { .. })),
            "{bad} accepted"
        );
    }
    assert!(matches!(
        m.call("not_a_tool_name", json!({})),
        Err(McpError::InvalidInput { .. })
    ));
    assert!(matches!(
        m.call("mcp__ghost__echo", json!({})),
        Err(McpError::InvalidInput { .. })
    ));
}

#[test]
fn a_failing_server_does_not_block_the_others_and_disabled_ones_stay_off() {
    let dir = tempdir();
    {
        let m = McpManager::open(config(&dir)).unwrap();
        m.register(demo_cfg("demo")).unwrap();
        m.register(demo_cfg("other")).unwrap();
        let broken = McpServerConfig::stdio("broken", "/no/such/binary", Vec::<String>::new());
        assert!(matches!(m.register(broken), Err(McpError::Spawn { .. })));
        assert!(matches!(status(&m, "broken"), ServerStatus::Failed(_)));
        assert!(m.set_enabled("other", false).unwrap());
        // set_enabled changes the flag only: still running until a restart.
        assert_eq!(status(&m, "other"), ServerStatus::Connected);
        m.close().unwrap();
    }
    let m = McpManager::open(config(&dir)).unwrap();
    m.wait_started();
    assert!(m
        .errors()
        .get("broken")
        .unwrap()
        .contains("/no/such/binary"));
    assert_eq!(status(&m, "demo"), ServerStatus::Connected);
    assert_eq!(status(&m, "other"), ServerStatus::Disabled);
    assert!(m.call("mcp__other__echo", json!({"text": "x"})).is_err());
    assert_eq!(
        text(m.call("mcp__demo__echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
    // restart applies the flag now.
    m.restart("other").unwrap();
    assert_eq!(status(&m, "other"), ServerStatus::Disabled);
    m.set_enabled("other", true).unwrap();
    m.restart("other").unwrap();
    assert_eq!(status(&m, "other"), ServerStatus::Connected);
    // The failure reached the server's log file as a lifecycle line.
    m.store().flush().unwrap();
    let log = std::fs::read_to_string(m.store().log_path("broken")).unwrap();
    assert!(
        log.contains("[lifecycle]") && log.contains("failed to start"),
        "{log}"
    );
}

/// The manager's recorded start failure says why the server ended: its
/// last stderr line (issue 24).
#[test]
fn a_start_failure_records_the_servers_stderr() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    assert!(m
        .register(script_config("brave", "missing_env_mcp_server.py", &[]))
        .is_err());
    let errors = m.errors();
    let e = errors.get("brave").expect("recorded");
    assert!(
        e.contains("Error: BRAVE_API_KEY environment variable is required"),
        "{e}"
    );
    m.close().unwrap();
}

#[test]
fn media_becomes_a_file_served_with_its_content_type() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    let md = text(m.call("mcp__demo__image", json!({})).unwrap());
    assert!(
        md.starts_with("a 1x1 red pixel\n![image](/api/mcp-media/"),
        "{md}"
    );
    // A pixel's few dozen bytes are said in bytes, not rounded up to 1 KB.
    assert!(
        md.contains(".png) (image/png, ") && md.ends_with(" B)"),
        "{md}"
    );
    let file = md
        .split("/api/mcp-media/")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let (bytes, ct) = m.media().read(file).unwrap();
    assert_eq!(ct, "image/png");
    assert!(bytes.starts_with(b"\x89PNG"));
    assert!(m.media().read("../x").is_err());
    assert!(m.media().read("/etc/passwd").is_err());
    // Only http(s) resource links are links in what the model sees; a
    // file: URI is shown as code (a host must not follow it blindly).
    let link = text(m.call("mcp__demo__resource_link", json!({})).unwrap());
    assert_eq!(link, "text/plain: `file:///demo/readme.txt`");
}

#[test]
fn grants_survive_reopening_and_stack_grants_end_with_their_frame() {
    let dir = tempdir();
    let session = GrantScope::Session("s1".into());
    let stack = GrantScope::Stack("frame-7".into());
    {
        let m = McpManager::open(config(&dir)).unwrap();
        m.register(demo_cfg("demo")).unwrap();
        m.register(demo_cfg("other")).unwrap();
        let msg = m
            .activate_tools(&session, &json!({"groups": ["demo", "config", "nope"]}))
            .unwrap();
        assert!(
            msg.contains("demo, config") && msg.contains("Unknown group(s): nope"),
            "{msg}"
        );
        m.activate_tools(&stack, &json!({"groups": ["other"]}))
            .unwrap();
        // tools_for shows only the granted server's tools.
        let defs = m.tools_for(&m.grants(&session).unwrap());
        assert!(!defs.is_empty());
        assert!(defs.iter().all(|d| d["function"]["name"]
            .as_str()
            .unwrap()
            .starts_with("mcp__demo__")));
        m.close().unwrap();
    }
    let m = McpManager::open(config(&dir)).unwrap();
    let g = m.grants(&session).unwrap();
    assert_eq!(
        g,
        ["config", "demo"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Grants>()
    );
    assert_eq!(m.grants(&stack).unwrap().len(), 1);
    assert_eq!(m.end_stack("frame-7").unwrap(), 1);
    assert!(m.grants(&stack).unwrap().is_empty());
    m.wait_started();
    let block = m.render_mcp_list(&g).unwrap();
    assert!(
        block.contains("| `other`") && block.contains("- `demo`"),
        "{block}"
    );
}

#[test]
fn events_are_persisted_as_pending_and_stderr_reaches_the_log_file() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    m.call(
        "mcp__demo__notify",
        json!({"method": "event/new_email", "params": {"subject": "hi"}}),
    )
    .unwrap();
    m.call(
        "mcp__demo__log",
        json!({"level": "warning", "message": "rate limit"}),
    )
    .unwrap();
    m.store().flush().unwrap();
    let ev = m.store().pending_events(10).unwrap();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(
        (ev[0].server.as_str(), ev[0].method.as_str()),
        ("demo", "event/new_email")
    );
    assert_eq!(ev[0].params, json!({"subject": "hi"}));
    let log = std::fs::read_to_string(m.store().log_path("demo")).unwrap();
    assert!(
        log.contains("[stderr]") && log.contains("demo server ready"),
        "{log}"
    );
    assert!(
        log.contains("[warning]") && log.contains("rate limit"),
        "{log}"
    );
    assert!(
        log.contains("[lifecycle]") && log.contains("connected"),
        "{log}"
    );
}

#[test]
fn management_tools_register_toggle_and_delete() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    let defs = McpManager::management_tool_definitions();
    let names: Vec<&str> = defs
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["register_mcp", "delete_mcp", "toggle_item", "list_items"]
    );
    let args = json!({
        "name": "demo", "transport": "stdio", "command": "python3",
        "args": [repo_path("scripts/demo_mcp_server.py")], "description": "Demo tools"
    });
    let r = m.handle_management_tool("register_mcp", &args).unwrap();
    assert!(r.starts_with("Registered MCP server 'demo'"), "{r}");
    assert_eq!(
        text(
            m.call("mcp__demo__echo", json!({"text": "via tool"}))
                .unwrap()
        ),
        "via tool"
    );
    let r = m
        .handle_management_tool(
            "toggle_item",
            &json!({"kind": "mcp", "id": "demo", "enabled": false}),
        )
        .unwrap();
    assert!(r.contains("next restart"), "{r}");
    let listed: Value = serde_json::from_str(
        &m.handle_management_tool("list_items", &json!({"type": "mcp"}))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(listed[0]["enabled"], false);
    assert_eq!(listed[0]["description"], "Demo tools");
    let r = m
        .handle_management_tool("delete_mcp", &json!({"name": "demo"}))
        .unwrap();
    assert_eq!(r, "Deleted MCP server 'demo'.");
    assert!(m
        .handle_management_tool("register_mcp", &json!({"name": "x", "transport": "ftp"}))
        .is_err());
}

#[test]
fn close_leaves_no_child_behind() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("a")).unwrap();
    m.register(script_config(
        "b",
        "hostile_mcp_server.py",
        &["ignore_sigterm"],
    ))
    .unwrap();
    let pid: u32 = text(m.call("mcp__a__pid", json!({})).unwrap())
        .parse()
        .unwrap();
    let hostile = m.client("b").unwrap();
    drop(hostile);
    m.close().unwrap();
    assert_eq!(proc_state(pid), None);
    assert!(eventually(Duration::from_secs(5), || group_members(pid).is_empty()));
    assert!(
        m.register(demo_cfg("late")).is_err(),
        "a closed manager accepted work"
    );
}

/// The children of `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(')') else {
            continue;
        };
        if after
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok())
            == Some(pid)
        {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_example_shuts_down_cleanly_on_sigint() {
    example_shuts_down_cleanly_on(libc::SIGINT);
}

#[test]
fn the_example_shuts_down_cleanly_on_sigterm() {
    example_shuts_down_cleanly_on(libc::SIGTERM);
}

fn example_shuts_down_cleanly_on(signal: libc::c_int) {
    use std::io::{BufRead, BufReader};
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("manager");
    if !example.exists() {
        eprintln!("skipping: {} not built", example.display());
        return;
    }
    let mut child = std::process::Command::new(&example)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = crossbeam_channel::unbounded();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_deadline(deadline)
            .expect("the example reached its wait");
        if line.starts_with("running;") {
            break;
        }
    }
    let servers = children(pid);
    assert_eq!(servers.len(), 1, "one demo server child expected");
    // SAFETY: signalling a child this test spawned and has not reaped.
    unsafe { libc::kill(pid as i32, signal) };
    let mut rest = Vec::new();
    while let Ok(l) = rx.recv_deadline(deadline) {
        rest.push(l);
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?} {rest:?}");
    assert!(rest.iter().any(|l| l == "closed cleanly"), "{rest:?}");
    assert!(
        servers
            .iter()
            .all(|&p| proc_state(p).is_none() || !alive(p)),
        "a server outlived the example"
    );
}

#[test]
fn a_killed_server_is_restarted_with_backoff() {
    let dir = tempdir();
    let mut cfg = config(&dir);
    cfg.restart = skald_mcp::manager::RestartPolicy {
        enabled: true,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
        max_attempts: 5,
    };
    let m = McpManager::open(cfg).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    let pid: u32 = text(m.call("mcp__demo__pid", json!({})).unwrap())
        .parse()
        .unwrap();
    // SAFETY: killing the server child this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    // While it restarts, calls fail fast with a clear error (or already
    // reach the new process).
    let t = std::time::Instant::now();
    match m.call("mcp__demo__echo", json!({"text": "during"})) {
        Ok(r) => assert_eq!(text(r), "during"),
        Err(e) => assert!(matches!(e, McpError::Disconnected { .. }), "{e}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5));
    let back = eventually(Duration::from_secs(20), || {
        m.call("mcp__demo__pid", json!({}))
            .ok()
            .and_then(|r| text(r).parse::<u32>().ok())
            .is_some_and(|p| p != pid)
    });
    assert!(back, "the server did not come back");
    assert_eq!(
        text(m.call("mcp__demo__echo", json!({"text": "again"})).unwrap()),
        "again"
    );
    assert_eq!(status(&m, "demo"), ServerStatus::Connected);
    m.store().flush().unwrap();
    let log = std::fs::read_to_string(m.store().log_path("demo")).unwrap();
    assert!(log.contains("restart attempt 1/5"), "{log}");
    assert!(log.contains("restarted after 1 attempt(s)"), "{log}");
    m.close().unwrap();
}

#[test]
fn without_restart_a_crash_stays_visible() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    let pid: u32 = text(m.call("mcp__demo__pid", json!({})).unwrap())
        .parse()
        .unwrap();
    // SAFETY: killing the server child this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(eventually(Duration::from_secs(10), || matches!(
        status(&m, "demo"),
        ServerStatus::Failed(_)
    )));
    assert!(matches!(
        m.call("mcp__demo__echo", json!({"text": "x"})),
        Err(McpError::Disconnected { .. })
    ));
}

#[test]
fn tools_for_follows_a_list_change_without_a_restart() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    let grants: Grants = ["demo".to_string()].into_iter().collect();
    let n = m.tools_for(&grants).len();
    m.call("mcp__demo__register_tool", json!({"name": "late_tool"}))
        .unwrap();
    let has = || {
        m.tools_for(&grants)
            .iter()
            .any(|d| d["function"]["name"] == "mcp__demo__late_tool")
    };
    assert!(
        eventually(Duration::from_secs(10), has),
        "tools_for did not follow list_changed"
    );
    assert_eq!(m.tools_for(&grants).len(), n + 1);
    assert_eq!(
        text(
            m.call("mcp__demo__late_tool", json!({"text": "new"}))
                .unwrap()
        ),
        "new"
    );
}

/// The per-server log file is where the README and the CLI say:
/// `<data>/logs/mcp/<name>.log` (it was once `<data>/logs/logs/mcp/`).
#[test]
fn log_files_are_under_logs_mcp() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("logpath")).unwrap();
    m.store().flush().unwrap();
    let want = dir.0.join("logs").join("mcp").join("logpath.log");
    let log = std::fs::read_to_string(&want).unwrap_or_else(|e| panic!("{}: {e}", want.display()));
    assert!(log.contains("demo server ready"), "{log}");
    assert!(!dir.0.join("logs").join("logs").exists());
    m.close().unwrap();
}

/// A tool whose name a model API would refuse (a space, a newline, too
/// long) is left out of the definitions given to the model; the others
/// stay, and the bad one is not reachable by a forged name either.
#[test]
fn tools_with_names_a_model_refuses_are_left_out() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(demo_cfg("demo")).unwrap();
    let grants: Grants = ["demo".to_string()].into_iter().collect();
    let n = m.tools_for(&grants).len();
    let long = "x".repeat(80);
    for bad in ["evil name", "evil\nname", long.as_str()] {
        m.call("mcp__demo__register_tool", json!({"name": bad}))
            .unwrap();
    }
    m.call("mcp__demo__register_tool", json!({"name": "fine_tool"}))
        .unwrap();
    let has_fine = || {
        m.tools_for(&grants)
            .iter()
            .any(|d| d["function"]["name"] == "mcp__demo__fine_tool")
    };
    assert!(
        eventually(Duration::from_secs(10), has_fine),
        "fine_tool never listed"
    );
    let defs = m.tools_for(&grants);
    assert_eq!(defs.len(), n + 1, "only fine_tool was added");
    for d in &defs {
        let name = d["function"]["name"].as_str().unwrap();
        assert!(skald_mcp::manager::is_model_tool_name(name), "{name:?}");
    }
}

/// The manager's store has the default event caps: a server flooding
/// notifications gets its first `STORE_MAX_PENDING_EVENTS_PER_SERVER`
/// stored and the rest refused, counted and reported in its log.
#[test]
fn a_flooding_server_is_held_at_the_default_pending_cap() {
    use skald_mcp::limits::STORE_MAX_PENDING_EVENTS_PER_SERVER as CAP;
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(script_config(
        "flood",
        "hostile_mcp_server.py",
        &["notify_flood"],
    ))
    .unwrap();
    let n = CAP + 50;
    assert_eq!(
        text(m.call("mcp__flood__burst", json!({ "n": n })).unwrap()),
        format!("burst {n}")
    );
    m.store().flush().unwrap();
    let pending = m.store().pending_events(usize::MAX).unwrap();
    assert_eq!(pending.len() as u64, CAP);
    assert_eq!(pending.last().unwrap().params, json!({ "i": CAP }));
    assert_eq!(m.store().stats().events_refused, 50);
    let log = std::fs::read_to_string(m.store().log_path("flood")).unwrap();
    assert!(
        log.contains("[lifecycle]") && log.contains("refusing new events"),
        "{log}"
    );
    m.close().unwrap();
}

/// `ManagerConfig::event_retention` reaches the manager's store: with a
/// pending cap of 20 events per server, a burst of 30 stores 20 and
/// refuses 10.
#[test]
fn the_managers_event_retention_is_configurable() {
    let dir = tempdir();
    let mut cfg = config(&dir);
    cfg.event_retention.pending_per_server = skald_mcp::store::EventCap::new(20, u64::MAX);
    let m = McpManager::open(cfg).unwrap();
    m.register(script_config(
        "flood",
        "hostile_mcp_server.py",
        &["notify_flood"],
    ))
    .unwrap();
    assert_eq!(
        text(m.call("mcp__flood__burst", json!({ "n": 30 })).unwrap()),
        "burst 30"
    );
    m.store().flush().unwrap();
    assert_eq!(m.store().pending_events(usize::MAX).unwrap().len(), 20);
    assert_eq!(m.store().stats().events_refused, 10);
    m.close().unwrap();
}

/// Two threads close the manager at once (as a host's signal thread and
/// its main thread do): neither returns before the server, which ignores
/// SIGTERM and must be killed, is gone.
#[test]
fn a_close_racing_another_waits_for_it() {
    let dir = tempdir();
    let m = std::sync::Arc::new(McpManager::open(config(&dir)).unwrap());
    m.register(script_config("g", "hostile_mcp_server.py", &["grandchild"]))
        .unwrap();
    let pids: serde_json::Value =
        serde_json::from_str(&text(m.call("mcp__g__pids", json!({})).unwrap())).unwrap();
    let me = pids["self"].as_u64().unwrap() as u32;
    assert!(common::alive(me));
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let closers: Vec<_> = (0..2)
        .map(|_| {
            let (m, b) = (std::sync::Arc::clone(&m), std::sync::Arc::clone(&barrier));
            std::thread::spawn(move || {
                b.wait();
                m.close().unwrap();
                // The direct child is reaped by the close that killed it.
                common::alive(me)
            })
        })
        .collect();
    for c in closers {
        assert!(!c.join().unwrap(), "a close returned with the server alive");
    }
}

/// A server whose media metadata attacks the markdown lines the manager
/// writes (issue 20, point 4): a `mimeType` that closes the image link and
/// opens a beacon, `javascript:` and `](`-smuggling resource links. No line
/// gains a link or image the server chose; the only image is the manager's
/// own `/api/mcp-media/` one.
#[test]
fn hostile_media_metadata_cannot_forge_markdown() {
    let dir = tempdir();
    let m = McpManager::open(config(&dir)).unwrap();
    m.register(script_config(
        "h",
        "hostile_mcp_server.py",
        &["markdown_inject"],
    ))
    .unwrap();
    let md = text(m.call("mcp__h__media", json!({})).unwrap());
    assert!(md.starts_with("media follows\n"), "{md}");
    // What a renderer would follow: the text outside `code spans`.
    let outside_code: String = md.split('`').step_by(2).collect();
    assert!(!outside_code.contains("](javascript"), "{md}");
    assert!(!outside_code.contains("](https://evil"), "{md}");
    assert_eq!(outside_code.matches("](").count(), 1, "{md}");
    assert_eq!(md.matches("![").count(), 1, "{md}");
    assert!(md.contains("![image](/api/mcp-media/"), "{md}");
    assert_eq!(md.lines().count(), 4, "one line per block: {md}");
    for l in md.lines().filter(|l| l.contains("javascript")) {
        assert!(l.starts_with("text/html: `") && l.ends_with('`'), "{l}");
    }
    m.close().unwrap();
}
