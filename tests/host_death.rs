//! No orphans when the host dies. A thread that holds an `McpServer` or an
//! `McpManager` and panics unwinds through their `Drop`, which kills the
//! server's whole process group (grandchildren included) and reaps the
//! child. A host that is SIGKILLed runs no destructor: on Linux the kernel
//! kills its servers (`PR_SET_PDEATHSIG`), even one that ignores SIGTERM and
//! stdin EOF, and even when the thread that connected it exited long before.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use skald_mcp::manager::{ManagerConfig, McpManager, ToolResult};
use skald_mcp::{McpCallResult, McpServerClient};

/// The pids the hostile `grandchild` server reports: itself and its child.
fn parse_pids(t: &str) -> (u32, u32) {
    let v: Value = serde_json::from_str(t).unwrap();
    (
        v["self"].as_u64().unwrap() as u32,
        v["grandchild"].as_u64().unwrap() as u32,
    )
}

fn assert_gone(me: u32, grandchild: u32) {
    // The child is reaped by the unwinding Drop, synchronously.
    assert_eq!(proc_state(me), None, "server {me} not reaped");
    // The grandchild was SIGKILLed with the group; init reaps it.
    assert!(
        eventually(Duration::from_secs(5), || !alive(grandchild)),
        "grandchild {grandchild} survived the panic"
    );
    assert!(group_members(me).is_empty(), "group {me} not empty");
}

#[test]
fn a_panicking_thread_holding_a_server_leaves_no_process() {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let t = std::thread::spawn(move || {
        let s = hostile("grandchild", test_options()).unwrap();
        let McpCallResult::Text(t) = s.call_tool("pids", json!({})).unwrap() else {
            panic!("pids returned no text");
        };
        tx.send(parse_pids(&t)).unwrap();
        panic!("the host thread panics while it holds the server");
    });
    let (me, grandchild) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server started");
    assert!(t.join().is_err(), "the thread panicked");
    assert_gone(me, grandchild);
}

#[test]
fn a_panicking_thread_holding_a_manager_leaves_no_process() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("skald-host-panic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let d = dir.clone();
    let t = std::thread::spawn(move || {
        let mut cfg = ManagerConfig::in_dir(&d);
        cfg.client = test_options();
        let m = McpManager::open(cfg).unwrap();
        m.register(script_config("g", "hostile_mcp_server.py", &["grandchild"]))
            .unwrap();
        let ToolResult::Text(t) = m.call("mcp__g__pids", json!({})).unwrap() else {
            panic!("pids returned no text");
        };
        tx.send(parse_pids(&t)).unwrap();
        panic!("the host thread panics while it holds the manager");
    });
    let (me, grandchild) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server started");
    assert!(t.join().is_err(), "the thread panicked");
    assert_gone(me, grandchild);
    let _ = std::fs::remove_dir_all(&dir);
}

const HOST_CHILD_ENV: &str = "SKALD_HOST_DEATH_CHILD";

/// How many servers the SIGKILLed host starts at once.
const PARALLEL_SERVERS: usize = 6;

/// The host side of [`a_sigkilled_host_takes_its_servers_with_it`]: a no-op
/// unless the parent re-executed this binary with the variable set.
#[test]
fn host_child() {
    if std::env::var_os(HOST_CHILD_ENV).is_none() {
        return;
    }
    // Connected from threads that end at once: the servers must outlive
    // them. Started all at once, as a manager starts its servers.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(PARALLEL_SERVERS));
    let starters: Vec<_> = (0..PARALLEL_SERVERS)
        .map(|i| {
            let b = std::sync::Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut cfg = script_config(
                    &format!("stubborn{i}"),
                    "hostile_mcp_server.py",
                    &["ignore_sigterm"],
                );
                cfg.env.insert("HOSTILE_LIFETIME_SECS".into(), "120".into());
                b.wait();
                skald_mcp::McpServer::connect(&cfg, test_options()).unwrap()
            })
        })
        .collect();
    let servers: Vec<_> = starters.into_iter().map(|t| t.join().unwrap()).collect();
    for s in &servers {
        assert!(s.call_tool("echo", json!({"text": "x"})).is_ok());
    }
    // Each child was started by its server's own I/O thread, which lives as
    // long as the connection: no process-wide spawner thread, and one I/O
    // thread per server ("mcp-stubborn3-io", cut by `comm` to 15 bytes).
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("skald-mcp-spawn")),
        "a spawner thread: {names:?}"
    );
    let io = names
        .iter()
        .filter(|n| n.starts_with("mcp-stubborn"))
        .count();
    assert_eq!(io, PARALLEL_SERVERS, "I/O threads: {names:?}");
    let pids: Vec<String> = servers.iter().map(|s| s.pid().to_string()).collect();
    println!("PID {}", pids.join(" "));
    // Wait to be killed (bounded, in case the parent is gone).
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(servers);
}

#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_host_takes_its_servers_with_it() {
    let mut host = Command::new(std::env::current_exe().unwrap())
        .args(["host_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(HOST_CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = host.stdout.take().unwrap();
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test host_child ... " before it.
            if let Some((_, p)) = line.split_once("PID ") {
                let pids: Vec<u32> = p.split_whitespace().map(|p| p.parse().unwrap()).collect();
                let _ = tx.send(pids);
            }
        }
    });
    let servers = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(p) => p,
        Err(e) => {
            let _ = host.kill();
            let _ = host.wait();
            panic!("the host printed no server pid: {e:?}");
        }
    };
    assert_eq!(servers.len(), PARALLEL_SERVERS);
    for &server in &servers {
        assert!(
            alive(server),
            "server {server} died with the thread that connected it"
        );
    }
    // SAFETY: signalling the child this test spawned and has not reaped.
    unsafe { libc::kill(host.id() as libc::pid_t, libc::SIGKILL) };
    host.wait().unwrap();
    let started = Instant::now();
    let gone = eventually(Duration::from_secs(10), || {
        servers.iter().all(|&server| !alive(server))
    });
    let left: Vec<u32> = servers.iter().copied().filter(|&s| alive(s)).collect();
    for &server in &left {
        // Do not leave it behind for the next test run.
        // SAFETY: the pid is still a live server (checked just above).
        unsafe { libc::kill(server as libc::pid_t, libc::SIGKILL) };
    }
    assert!(gone, "servers {left:?} outlived their SIGKILLed host");
    eprintln!(
        "servers gone {:?} after the host was killed",
        started.elapsed()
    );
}

/// A server that closes its stdout and stderr but stays alive can no longer
/// be talked to: its I/O thread ends, and since that thread started it, the
/// kernel kills it (`PR_SET_PDEATHSIG`) rather than it lingering until the
/// client is dropped. The client still reaps it.
#[cfg(target_os = "linux")]
#[test]
fn a_server_that_closes_its_pipes_dies_with_its_io_thread() {
    let cfg =
        skald_mcp::McpServerConfig::stdio("mute", "sh", ["-c", "exec >&- 2>&-; exec sleep 120"]);
    let server = skald_mcp::McpServer::spawn(&cfg, test_options()).unwrap();
    let pid = server.pid();
    let gone = eventually(Duration::from_secs(20), || !alive(pid));
    if !gone {
        // SAFETY: our own child, still unreaped (the server holds it).
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    assert!(gone, "server {pid} outlived its I/O thread");
    assert!(
        server.call_tool("x", json!({})).is_err(),
        "a call to a dead server fails"
    );
    drop(server);
    assert_eq!(proc_state(pid), None, "server {pid} not reaped");
}
