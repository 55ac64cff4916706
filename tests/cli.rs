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
    assert_eq!(v["type"], "json");
    assert_eq!(v["value"], serde_json::json!({"sum": 5}));
    assert!(v["text"].is_string(), "{v}");
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

/// The reference filesystem server from npm (pinned in
/// `tests/everything/package.json`, installed by `tests/setup.sh`).
fn filesystem_server() -> String {
    let js = repo_path(
        "tests/everything/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    assert!(
        std::path::Path::new(&js).exists(),
        "{js} is missing: run tests/setup.sh"
    );
    js
}

/// A directory with a text file and a small PNG, for the filesystem server.
fn files(e: &Env) -> PathBuf {
    let dir = e.dir.join("files");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "hello world\n").unwrap();
    std::fs::write(dir.join("red.png"), common::PNG_1X1_RED).unwrap();
    dir
}

fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Human output is what a person reads: the text content, not the
/// structured content beside it; a primitive output's `{"result": …}`
/// unwrapped; saved media shown as a path, never as its base64 (also not
/// through a structured mirror). `--json` still has all of it.
#[test]
fn results_are_shown_as_people_read_them() {
    let e = Env::new();
    let dir = files(&e);
    let dir_s = dir.to_string_lossy().into_owned();
    let fs = filesystem_server();
    let media_dir = e.dir.join("media");
    let media_s = media_dir.to_string_lossy().into_owned();
    // `--json` is a global option: it goes before `connect`.
    let connect = |extra: &[&str]| {
        let (globals, verb) = match extra.split_first() {
            Some((&"--json", rest)) => (&["--json"][..], rest),
            _ => (&[][..], extra),
        };
        let mut a: Vec<&str> = globals.to_vec();
        a.extend_from_slice(&["--media-dir", &media_s, "connect"]);
        a.extend_from_slice(verb);
        a.extend_from_slice(&["--", "node", &fs, &dir_s]);
        e.run(&a)
    };
    let text_file = dir.join("a.txt");
    let o = connect(&[
        "call",
        "read_text_file",
        "--arg",
        &format!("path={}", text_file.display()),
    ]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    // The file's text, as it is (its own newline not doubled), not
    // `{"content": "hello world\n"}`.
    assert_eq!(stdout_of(&o), "hello world\n");
    let o = connect(&[
        "--json",
        "call",
        "read_text_file",
        "--arg",
        &format!("path={}", text_file.display()),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["value"], serde_json::json!({"content": "hello world\n"}));

    // An image: saved, shown as one line with its path and size in bytes;
    // its base64 (also in the structured content) nowhere on stdout.
    let png = dir.join("red.png");
    let o = connect(&[
        "call",
        "read_media_file",
        "--arg",
        &format!("path={}", png.display()),
    ]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    let out = stdout_of(&o);
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(common::PNG_1X1_RED);
    assert!(!out.contains(&b64[..24]), "media bytes printed: {out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let size = format!("(image/png, {} B)", common::PNG_1X1_RED.len());
    assert!(
        out.starts_with(&format!("![image]({media_s}/")) && out.trim_end().ends_with(&size),
        "{out}"
    );
    let path = out.split_once("](").unwrap().1.split_once(") ").unwrap().0;
    assert_eq!(std::fs::read(path).unwrap(), common::PNG_1X1_RED);

    // FastMCP's `-> int`: structuredContent {"result": 3}, text "3".
    let fastmcp = repo_path("tests/servers/fastmcp_server.py");
    let out = e.ok(&[
        "connect",
        "call",
        "count_words",
        "--arg",
        "text=one two three",
        "--",
        "python3",
        &fastmcp,
    ]);
    assert_eq!(out, "3\n");
    let v: Value = serde_json::from_str(&e.ok(&[
        "--json",
        "connect",
        "call",
        "count_words",
        "--arg",
        "text=a b",
        "--",
        "python3",
        &fastmcp,
    ]))
    .unwrap();
    assert_eq!(v["value"], serde_json::json!({"result": 2}));
}

/// `--arg` values follow the tool's input schema: `text=123` stays the
/// string the schema asks for (FastMCP would reject a number), `a=2` is
/// the integer `add` asks for, and a value that cannot be what the schema
/// asks is a usage error naming the argument, before anything is sent.
#[test]
fn args_are_typed_from_the_input_schema() {
    let e = Env::new();
    let fastmcp = repo_path("tests/servers/fastmcp_server.py");
    let out = e.ok(&[
        "connect", "call", "echo", "--arg", "text=123", "--", "python3", &fastmcp,
    ]);
    assert_eq!(out, "123\n");
    let out = e.ok(&[
        "connect",
        "call",
        "echo",
        "--arg",
        "text=true",
        "--",
        "python3",
        &fastmcp,
    ]);
    assert_eq!(out, "true\n");
    let v: Value = serde_json::from_str(&e.ok(&[
        "--json", "connect", "call", "add", "--arg", "a=2", "--arg", "b=40", "--", "python3",
        &fastmcp,
    ]))
    .unwrap();
    assert_eq!(v["value"], serde_json::json!({"sum": 42}));
    let o = e.run(&[
        "connect", "call", "add", "--arg", "a=two", "--arg", "b=1", "--", "python3", &fastmcp,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr_of(&o));
    let err = stderr_of(&o);
    assert!(err.contains("--arg a") && err.contains("integer"), "{err}");
}

/// `connect` takes `--env` (and reaches the server with it), and reads a
/// server from an `mcpServers` file with `--config FILE [--server NAME]`.
#[test]
fn connect_takes_env_and_a_config_file() {
    let e = Env::new();
    let hostile = repo_path("scripts/hostile_mcp_server.py");
    let out = e.ok(&[
        "connect",
        "call",
        "env",
        "--env",
        "SKALD_CLI_TEST=from-env",
        "--",
        "python3",
        &hostile,
        "env",
    ]);
    let env: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(env["SKALD_CLI_TEST"], "from-env");

    std::fs::create_dir_all(&e.dir).unwrap();
    let cfg = e.dir.join("claude_desktop_config.json");
    std::fs::write(
        &cfg,
        serde_json::json!({"mcpServers": {
            "demo": {"command": "python3", "args": [repo_path("scripts/demo_mcp_server.py")]},
            "env": {"command": "python3", "args": [&hostile, "env"], "env": {"FROM_FILE": "yes"}}
        }})
        .to_string(),
    )
    .unwrap();
    let cfg_s = cfg.to_string_lossy().into_owned();
    let out = e.ok(&[
        "connect",
        "call",
        "echo",
        "--arg",
        "text=via config",
        "--config",
        &cfg_s,
        "--server",
        "demo",
    ]);
    assert_eq!(out, "via config\n");
    let out = e.ok(&[
        "connect", "call", "env", "--config", &cfg_s, "--server", "env", "--env", "EXTRA=1",
    ]);
    let env: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (env["FROM_FILE"].as_str(), env["EXTRA"].as_str()),
        (Some("yes"), Some("1"))
    );
    // Two servers and no --server: a usage error that names them.
    let o = e.run(&["connect", "tools", "--config", &cfg_s]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr_of(&o);
    assert!(
        err.contains("demo") && err.contains("env") && err.contains("--server"),
        "{err}"
    );
    let o = e.run(&["connect", "tools", "--config", &cfg_s, "--server", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `import FILE` stores what it can and says, per entry, what it added,
/// replaced or skipped and why; the imported servers then work.
#[test]
fn import_reports_what_it_added_and_skipped() {
    let e = Env::new();
    std::fs::create_dir_all(&e.dir).unwrap();
    let file = e.dir.join("mcp.json");
    std::fs::write(
        &file,
        serde_json::json!({"servers": {
            "demo": {"type": "stdio", "command": "python3", "args": [repo_path("scripts/demo_mcp_server.py")]},
            "remote": {"type": "http", "url": "https://example.invalid/mcp",
                       "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}},
            "custom": {"url": "https://example.invalid/mcp", "headers": {"X-Api-Key": "${env:CUSTOM_KEY}"}},
            "basic": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Basic dTpw"}},
            "prompted": {"command": "x", "env": {"KEY": "${input:key}"}}
        }})
        .to_string(),
    )
    .unwrap();
    let file_s = file.to_string_lossy().into_owned();
    let out = e.ok(&["import", &file_s]);
    assert!(out.contains("added    demo: stdio"), "{out}");
    assert!(out.contains("added    remote: http"), "{out}");
    assert!(out.contains("added    custom: http"), "{out}");
    assert!(
        out.contains("skipped  basic: header \"Authorization\""),
        "{out}"
    );
    assert!(
        out.contains("skipped  prompted:") && out.contains("input:key"),
        "{out}"
    );
    assert!(out.contains("3 of 5 servers"), "{out}");
    let list: Value = serde_json::from_str(&e.ok(&["--json", "list"])).unwrap();
    let mut names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["custom", "demo", "remote"]);
    // The bearer token and the header are kept as references to the
    // variables, not values (the database holds what the file said).
    let store =
        skald_mcp::Store::open(skald_mcp::StoreConfig::new(e.dir.join("mcp.db"), &e.dir)).unwrap();
    let remote = store.get_server("remote").unwrap().unwrap();
    assert_eq!(remote.api_key.as_deref(), Some("${REMOTE_TOKEN}"));
    let custom = store.get_server("custom").unwrap().unwrap();
    assert_eq!(custom.headers["X-Api-Key"], "${CUSTOM_KEY}");
    store.close().unwrap();
    assert_eq!(
        e.ok(&["call", "demo", "echo", "--arg", "text=imported"]),
        "imported\n"
    );
    // Again: nothing overwritten without --replace.
    let out = e.ok(&["import", &file_s]);
    assert!(
        out.contains("skipped  demo: a server of that name is stored already"),
        "{out}"
    );
    let out = e.ok(&["import", &file_s, "--replace"]);
    assert!(out.contains("replaced demo"), "{out}");
    // Not an mcpServers file: a usage error.
    std::fs::write(&file, "[1, 2]").unwrap();
    assert_eq!(e.run(&["import", &file_s]).status.code(), Some(2));
}

/// The server's log records and progress reach stderr as they come (the
/// result alone on stdout); `-q` silences them. A stored server's records
/// also go to its log file.
#[test]
fn log_records_and_progress_go_to_stderr() {
    let e = Env::new();
    let fastmcp = repo_path("tests/servers/fastmcp_server.py");
    let o = e.run(&[
        "connect",
        "call",
        "log",
        "--arg",
        "message=hear me",
        "--",
        "python3",
        &fastmcp,
    ]);
    assert!(o.status.success(), "{}", stderr_of(&o));
    assert_eq!(stdout_of(&o), "logged\n");
    let err = stderr_of(&o);
    assert!(
        err.contains("info: hear me") && err.contains("warning: hear me"),
        "{err}"
    );
    let o = e.run(&[
        "connect", "call", "progress", "--arg", "steps=2", "--", "python3", &fastmcp,
    ]);
    let err = stderr_of(&o);
    assert!(
        err.contains("[progress] 1/2 step 1") && err.contains("[progress] 2/2 step 2"),
        "{err}"
    );
    assert_eq!(stdout_of(&o), "progressed 2\n");
    for args in [
        &[
            "-q",
            "connect",
            "call",
            "log",
            "--arg",
            "message=hush",
            "--",
            "python3",
            &fastmcp,
        ][..],
        &[
            "-q", "connect", "call", "progress", "--arg", "steps=2", "--", "python3", &fastmcp,
        ],
    ] {
        let o = e.run(args);
        assert!(o.status.success());
        assert_eq!(stderr_of(&o), "", "{args:?}");
    }
    // A stored server: on stderr and in its log file.
    e.ok(&["add", "fm", "--", "python3", &fastmcp]);
    let o = e.run(&["call", "fm", "log", "--arg", "message=kept"]);
    assert!(stderr_of(&o).contains("info: kept"), "{}", stderr_of(&o));
    let logs = e.ok(&["logs", "fm"]);
    assert!(logs.contains("kept"), "{logs}");
}

/// A raw call for any method, and prompts: what the Inspector's
/// `--method` gives.
#[test]
fn raw_calls_and_prompts() {
    let e = Env::new();
    let demo = repo_path("scripts/demo_mcp_server.py");
    let v: Value = serde_json::from_str(&e.ok(&[
        "--json",
        "connect",
        "rpc",
        "tools/list",
        "--",
        "python3",
        &demo,
    ]))
    .unwrap();
    assert!(
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo"),
        "{v}"
    );
    let v: Value = serde_json::from_str(&e.ok(&[
        "connect",
        "rpc",
        "tools/call",
        r#"{"name":"echo","arguments":{"text":"raw"}}"#,
        "--",
        "python3",
        &demo,
    ]))
    .unwrap();
    assert_eq!(v["content"][0]["text"], "raw");
    // An unknown method: the server's JSON-RPC error, exit 3.
    let o = e.run(&["connect", "rpc", "no/such/method", "--", "python3", &demo]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr_of(&o));
    let resources = repo_path("tests/servers/fastmcp_resources_server.py");
    let out = e.ok(&[
        "connect",
        "prompt",
        "review",
        "--arg",
        "code=x = 1",
        "--",
        "python3",
        &resources,
    ]);
    assert!(out.contains("[user] Review (terse): x = 1"), "{out}");
    let out = e.ok(&["connect", "prompts", "--", "python3", &resources]);
    assert!(
        out.contains("review") && out.contains("code [style]"),
        "{out}"
    );
}

/// Small things a user noticed: the tools table keeps its columns with a
/// very long tool name (which is not cut: it is what one types back), and
/// an older protocol version is not a warning on every call.
#[test]
fn tables_and_warnings_stay_readable() {
    let e = Env::new();
    let hostile = repo_path("scripts/hostile_mcp_server.py");
    let out = e.ok(&[
        "connect",
        "tools",
        "--",
        "python3",
        &hostile,
        "markdown_inject",
    ]);
    let long = "a_tool_whose_name_is_much_wider_than_any_table_column_allows";
    assert!(out.lines().any(|l| l == long), "{out}");
    let desc_col = |needle: &str| {
        out.lines()
            .find(|l| l.contains(needle))
            .and_then(|l| l.find(needle))
    };
    assert_eq!(
        desc_col("Echo text back."),
        desc_col("A name wider than a table column."),
        "{out}"
    );
    let demo = repo_path("scripts/demo_mcp_server.py");
    for version in ["2024-11-05", "2025-06-18"] {
        let o = e.run(&[
            "connect",
            "ping",
            "--env",
            &format!("DEMO_PROTOCOL_VERSION={version}"),
            "--",
            "python3",
            &demo,
        ]);
        assert!(o.status.success(), "{}", stderr_of(&o));
        assert_eq!(stderr_of(&o), "", "{version}");
    }
}

/// `skald-mcp logs x | head`: as with every other command, a closed
/// stdout ends it quietly.
#[test]
fn logs_into_a_closed_pipe_end_quietly() {
    let e = Env::new();
    e.add_demo();
    e.ok(&["ping", "demo"]);
    let mut child = e
        .command(&["logs", "demo"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// `--log-level LEVEL` asks the server for records of LEVEL and above —
/// `logging/setLevel` in the legacy era, `_meta` on every request in the
/// 2026-07-28 era — and shows only those.
#[test]
fn log_level_is_asked_for_in_either_era_and_shown() {
    let e = Env::new();
    let fastmcp = repo_path("tests/servers/fastmcp_server.py");
    let o = e.run(&[
        "--log-level",
        "warning",
        "connect",
        "call",
        "log",
        "--arg",
        "message=m",
        "--",
        "python3",
        &fastmcp,
    ]);
    let err = stderr_of(&o);
    assert!(
        err.contains("warning: m") && !err.contains("info: m"),
        "{err}"
    );
    let demo = repo_path("scripts/demo_mcp_server.py");
    let received = |era: &str| -> Vec<Value> {
        let out = e.ok(&[
            "--log-level",
            "error",
            "connect",
            "call",
            "received",
            "--env",
            &format!("DEMO_ERA={era}"),
            "--",
            "python3",
            &demo,
        ]);
        let v: Value = serde_json::from_str(&out).unwrap();
        v["messages"].as_array().unwrap().clone()
    };
    let legacy = received("legacy");
    assert!(
        legacy
            .iter()
            .any(|m| m["method"] == "logging/setLevel" && m["params"]["level"] == "error"),
        "{legacy:?}"
    );
    let modern = received("modern");
    let calls: Vec<&Value> = modern
        .iter()
        .filter(|m| m["method"] == "tools/list")
        .collect();
    assert!(!calls.is_empty());
    for m in calls {
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/logLevel"], "error",
            "{m}"
        );
    }
    assert_eq!(
        e.run(&["--log-level", "loud", "list"]).status.code(),
        Some(2)
    );
}
