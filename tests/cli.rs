//! The `skald-mcp` binary, used as a new user would.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::repo_path;
use serde_json::Value;

struct Env {
    dir: PathBuf,
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Env {
    fn new() -> Env {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "skald-cli-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        Env { dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("the binary runs")
    }

    /// The CLI with `args`, on this environment's database.
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_skald-mcp"));
        c.args(args)
            .env("SKALD_MCP_DB", self.dir.join("mcp.db"))
            .env_remove("RUST_LOG");
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?} failed: {:?}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    fn add_demo(&self) {
        self.ok(&[
            "add",
            "demo",
            "--description",
            "Demo tools",
            "--",
            "python3",
            &repo_path("scripts/demo_mcp_server.py"),
        ]);
    }
}

#[test]
fn a_new_user_session() {
    let e = Env::new();
    assert!(e.ok(&["list"]).contains("no servers"));
    e.add_demo();
    let list = e.ok(&["list"]);
    assert!(
        list.contains("demo") && list.contains("Demo tools") && list.contains("stdio"),
        "{list}"
    );
    let tools = e.ok(&["tools", "demo"]);
    assert!(tools.lines().any(|l| l.starts_with("echo ")), "{tools}");
    assert_eq!(
        e.ok(&["call", "demo", "echo", r#"{"text":"hi there"}"#])
            .trim(),
        "hi there"
    );
    assert_eq!(
        e.ok(&["call", "demo", "echo", "--arg", "text=via arg"])
            .trim(),
        "via arg"
    );
    assert_eq!(
        e.ok(&["call", "demo", "notify", "--arg", r#"params={"k":1}"#])
            .trim(),
        "notified"
    );
    let events = e.ok(&["events"]);
    assert!(
        events.contains("event/demo") && events.contains(r#"{"k":1}"#),
        "{events}"
    );
    assert!(e.ok(&["events", "--pending"]).contains("event/demo"));
    assert!(e.ok(&["ping", "demo"]).starts_with("pong from demo"));
    let checked = e.ok(&["list", "--check"]);
    assert!(
        checked.contains("status: connected (legacy era, protocol 2025-11-25), 21 tools"),
        "{checked}"
    );
    let logs = e.ok(&["logs", "demo"]);
    assert!(
        logs.contains("[stderr]") && logs.contains("demo server ready"),
        "{logs}"
    );
    e.ok(&["disable", "demo"]);
    assert!(e.ok(&["list"]).contains(" no "));
    e.ok(&["enable", "demo"]);
    e.ok(&["remove", "demo"]);
    assert!(e.ok(&["list"]).contains("no servers"));
}

#[test]
fn json_output_is_valid_json_and_media_is_saved() {
    let e = Env::new();
    e.add_demo();
    let v: Value = serde_json::from_str(&e.ok(&[
        "--json", "call", "demo", "add", "--arg", "a=2", "--arg", "b=3",
    ]))
    .unwrap();
    assert_eq!(v, serde_json::json!({"type": "json", "value": {"sum": 5}}));
    let v: Value = serde_json::from_str(&e.ok(&["--json", "call", "demo", "image"])).unwrap();
    assert_eq!(v["type"], "media");
    let path = v["items"][0]["path"].as_str().unwrap();
    assert!(
        std::fs::read(path).unwrap().starts_with(b"\x89PNG"),
        "{path}"
    );
    let plain = e.ok(&["call", "demo", "image"]);
    assert!(
        plain.contains("![image](/") && plain.contains(".png) (image/png"),
        "{plain}"
    );
    let tools: Value = serde_json::from_str(&e.ok(&["--json", "tools", "demo"])).unwrap();
    assert!(tools
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "echo"));
    let list: Value = serde_json::from_str(&e.ok(&["--json", "list"])).unwrap();
    assert_eq!(list[0]["name"], "demo");
}

#[test]
fn exit_codes_and_one_line_errors() {
    let e = Env::new();
    for bad in [
        &["frobnicate"][..],
        &["call"],
        &["call", "demo", "echo", "{not json"],
        &["events", "--limit", "x"],
    ] {
        let o = e.run(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.starts_with("skald-mcp: "), "{err}");
        assert!(!err.contains("panicked") && !err.contains("backtrace"));
    }
    e.add_demo();
    let o = e.run(&["call", "demo", "fail"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("something went wrong"));
    let o = e.run(&["--json", "call", "demo", "fail"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["type"], "error");
    e.ok(&["add", "broken", "--", "/no/such/server/binary"]);
    let o = e.run(&["call", "broken", "echo"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let o = e.run(&["call", "ghost", "echo"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn direct_connection_without_the_database() {
    let e = Env::new();
    let out = e.ok(&[
        "connect",
        "call",
        "echo",
        "--arg",
        "text=direct",
        "--",
        "python3",
        &repo_path("scripts/demo_mcp_server.py"),
    ]);
    assert_eq!(out.trim(), "direct");
    let tools = e.ok(&[
        "connect",
        "tools",
        "--",
        "python3",
        &repo_path("scripts/demo_mcp_server.py"),
    ]);
    assert!(tools.contains("echo"));
    assert!(
        !e.dir.join("mcp.db").exists(),
        "connect must not create the database"
    );
}

fn pty(args: &[&str]) -> (i32, String) {
    let o = Command::new("python3")
        .arg(repo_path("tests/pty_run.py"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn terminal_shows_progress_and_masks_secrets() {
    let bin = env!("CARGO_BIN_EXE_skald-mcp");
    let demo = repo_path("scripts/demo_mcp_server.py");
    let (code, out) = pty(&[
        "30",
        "--",
        bin,
        "connect",
        "call",
        "progress",
        "--arg",
        "steps=3",
        "--arg",
        "interval=0.05",
        "--",
        "python3",
        &demo,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("[progress] 1/3") && out.contains("step 3"),
        "{out}"
    );
    assert!(out.contains("progressed 3"));

    let elicit = repo_path("scripts/elicitation_demo_mcp.py");
    let secret = "hunter2-typed";
    let (code, out) = pty(&[
        "30",
        &format!("password *: ={secret}"),
        "--",
        bin,
        "connect",
        "call",
        "sudo",
        "--",
        "python3",
        &elicit,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Enter sudo password"), "{out}");
    assert!(
        out.contains(&format!("accepted: {} chars", secret.len())),
        "{out}"
    );
    assert!(!out.contains(secret), "the secret was echoed: {out}");
}

#[test]
fn oauth_tokens_are_kept_in_the_database() {
    use std::io::BufRead;
    let mut server = Command::new("python3")
        .arg(repo_path("scripts/oauth_mcp_server.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().strip_prefix("READY ").unwrap().parse().unwrap();
    let e = Env::new();
    let url = format!("http://127.0.0.1:{port}/mcp");
    e.ok(&["add", "secured", "--url", &url]);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_skald-mcp"))
            .args(args)
            .env("SKALD_MCP_DB", e.dir.join("mcp.db"))
            .env("SKALD_MCP_OAUTH_HEADLESS", "1")
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let o = run(&["call", "secured", "whoami"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).starts_with("dyn-"));
    }
    let received: Value = serde_json::from_reader(
        ureq::get(&format!("http://127.0.0.1:{port}/_received"))
            .call()
            .unwrap()
            .into_body()
            .into_reader(),
    )
    .unwrap();
    let authorizes = received
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["path"] == "/authorize")
        .count();
    assert_eq!(
        authorizes, 1,
        "the second run did not reuse the stored tokens"
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// What a server controls reaches the terminal without its control
/// characters: an ESC sequence in a tool's text is shown, not obeyed.
#[test]
fn terminal_escapes_from_a_server_are_shown_not_obeyed() {
    let e = Env::new();
    e.add_demo();
    let out = e.ok(&[
        "call",
        "demo",
        "echo",
        "--arg",
        "text=\u{1b}]0;pwned\u{7}\u{1b}[2Jok",
    ]);
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2Jok"), "{out:?}");
}

/// `skald-mcp tools demo | head`: a closed stdout ends the CLI quietly
/// (no panic, the SIGPIPE status a shell expects; open clients are closed
/// first).
#[test]
fn a_closed_stdout_ends_quietly() {
    let e = Env::new();
    e.add_demo();
    let mut cmd = e.command(&["tools", "demo"]);
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before anything is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// A server that exits at start-up for lack of an environment variable:
/// the one-line error says why, with the line the server printed.
#[test]
fn a_start_failure_shows_the_servers_stderr() {
    let e = Env::new();
    let o = e.run(&[
        "connect",
        "tools",
        "--",
        "python3",
        &repo_path("scripts/missing_env_mcp_server.py"),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("exit status: 1")
            && err.contains("Error: BRAVE_API_KEY environment variable is required"),
        "{err}"
    );
}

/// Ctrl-C during a call to a server behind a wrapper that does not `exec`
/// (`sh` stays the direct child and the real server is its child, as under
/// `npx`): the CLI exits 130 and nothing of the wrapper's process group is
/// left. The server ignores SIGTERM, so only the close's final SIGKILL
/// ends it: a CLI that exits before that close has finished leaves it
/// behind.
#[test]
fn ctrl_c_during_a_call_leaves_nothing_of_a_wrapped_server() {
    use std::time::Duration;
    let e = Env::new();
    std::fs::create_dir_all(&e.dir).unwrap();
    let started = e.dir.join("call-started");
    let server = repo_path("scripts/hostile_mcp_server.py");
    // `; exit $?` keeps sh from exec'ing python.
    let wrapper = format!("python3 '{server}' slow_start; exit $?");
    let mut cli = e
        .command(&[
            "connect",
            "call",
            "slow",
            "--arg",
            &format!("file={}", started.display()),
            "--",
            "sh",
            "-c",
            &wrapper,
        ])
        .env("HOSTILE_LIFETIME_SECS", "120")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The server writes its pid once the call is running.
    let mut server_pid = None;
    let running = common::eventually(Duration::from_secs(30), || {
        server_pid = std::fs::read_to_string(&started)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        server_pid.is_some() || cli.try_wait().ok().flatten().is_some()
    });
    let Some(server_pid) = server_pid.filter(|_| running) else {
        let _ = cli.kill();
        let out = cli.wait_with_output().unwrap();
        panic!(
            "the call never started: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let group = std::fs::read_to_string(format!("/proc/{server_pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(2)?
                .parse::<u32>()
                .ok()
        })
        .expect("the server's process group");
    assert_ne!(group, server_pid, "the server is the wrapper's child");
    assert_eq!(common::group_members(group).len(), 2, "sh and python");
    // SAFETY: kill(2) of the CLI this test started, still running.
    unsafe { libc::kill(cli.id() as libc::pid_t, libc::SIGINT) };
    let exited = common::eventually(Duration::from_secs(20), || {
        cli.try_wait().ok().flatten().is_some()
    });
    if !exited {
        let _ = cli.kill();
    }
    // Checked the moment the CLI is gone, then cleaned up either way.
    let left = common::group_members(group);
    for pid in &left {
        // SAFETY: kill(2) of what is left of this test's own server.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    let out = cli.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(exited, "the CLI did not exit after SIGINT: {err}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(left.is_empty(), "left of the server's group: {left:?}");
}
