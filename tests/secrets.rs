//! Secrets never leave the process by a side door: a secret planted in an
//! `api_key`, an `env` value, a bearer token (also one a server echoes back
//! in an error body) and an elicited value (legacy requests, modern
//! `InputRequiredResult` rounds and `tasks/update`) is searched for in every
//! output — the log channel, `log` records (every level), the store's log
//! files and database (events table included), `Debug` of configs, errors,
//! clients and
//! `McpServerInfo`, and every error message.

mod common;
#[path = "http_support/mod.rs"]
mod http_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{json, Map};
use skald_mcp::manager::{ManagerConfig, McpManager};
use skald_mcp::{
    ElicitationRequest, ElicitationResponse, McpError, McpHttpServer, McpServer, McpServerClient,
    McpServerConfig,
};

const API_KEY: &str = "sk-APIKEY-4f1c9e-never-log";
const ENV_SECRET: &str = "ENVSECRET-77aa10-never-log";
const ELICITED: &str = "ELICITED-hunter2-never-log";
const ALL: [&str; 3] = [API_KEY, ENV_SECRET, ELICITED];

/// Every `log` record of the test binary, at every level.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        if r.target().starts_with("ureq_proto::util") && r.level() == log::Level::Trace {
            // Hex dumps of every byte on the wire: too many to keep.
            return;
        }
        self.0
            .lock()
            .push(format!("{} {}: {}", r.level(), r.target(), r.args()));
    }
    fn flush(&self) {}
}

/// Installs the capturing logger and sets the variables the tests
/// interpolate. Every test calls it first: the environment is written only
/// while no test runs past this point (no `setenv` racing a spawn).
fn captured() -> &'static Capture {
    static C: OnceLock<&'static Capture> = OnceLock::new();
    C.get_or_init(|| {
        std::env::set_var("SKALD_SECRETS_TEST_VAR", "from-the-host");
        std::env::set_var("SKALD_SECRETS_TEST_KEY", API_KEY);
        std::env::set_var("SKALD_SECRETS_TEST_ENV", ENV_SECRET);
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(c).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Trace);
        c
    })
}

/// Panics naming the place when any secret occurs in `text`.
fn assert_clean(what: &str, text: &str) {
    for s in ALL {
        assert!(!text.contains(s), "secret {s:?} leaked into {what}: {text}");
    }
}

fn assert_logs_clean() {
    for line in captured().0.lock().iter() {
        // ureq's own TRACE records hex-dump the raw request, headers
        // included (README, "Failure model"); everything else must be clean.
        if line.starts_with("TRACE ureq") {
            continue;
        }
        assert_clean("a log record", line);
    }
}

fn assert_err_clean(what: &str, e: &McpError) {
    assert_clean(what, &e.to_string());
    assert_clean(what, &format!("{e:?}"));
}

/// Every byte of every file under `dir` (database, WAL, log files).
fn assert_dir_clean(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&p).unwrap();
            for s in ALL {
                assert!(
                    !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
                    "secret {s:?} found in {}",
                    p.display()
                );
            }
        }
    }
    assert!(files > 0, "nothing was written under {}", dir.display());
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn tempdir() -> TempDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "skald-secrets-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

fn accept_secret(req: &ElicitationRequest) -> ElicitationResponse {
    let mut m = Map::new();
    m.insert(req.form.fields()[0].name.clone(), json!(ELICITED));
    ElicitationResponse::Accept(m)
}

#[test]
fn stdio_env_value_and_elicited_value() {
    captured();
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let cfg = common::script_config("elicit", "elicitation_demo_mcp.py", &[])
        .with_env("SKALD_TEST_SECRET", ENV_SECRET);
    assert_clean("Debug of the config", &format!("{cfg:?}"));
    let s = McpServer::connect(
        &cfg,
        common::test_options()
            .logs(ltx)
            .elicitation_handler(accept_secret),
    )
    .unwrap();
    assert_clean("Debug of the client", &format!("{s:?}"));
    let r = s.call_tool("sudo", json!({})).unwrap();
    assert_eq!(r.to_text(), format!("accepted: {} chars", ELICITED.len()));
    let e = s.call_tool("no_such_tool", json!({})).unwrap_err();
    assert_err_clean("an unknown-tool error", &e);
    s.close().unwrap();
    let e = s.call_tool("sudo", json!({})).unwrap_err();
    assert_err_clean("a closed-connection error", &e);
    for l in lrx.try_iter() {
        assert_clean("the log channel", &format!("{l:?}"));
    }

    // A spawn failure and a missing variable are errors without the value.
    let bad = McpServerConfig::stdio("bad", "/nonexistent/skald-mcp-server", ["x"])
        .with_env("SKALD_TEST_SECRET", ENV_SECRET);
    assert_err_clean(
        "a spawn error",
        &McpServer::connect(&bad, common::test_options()).unwrap_err(),
    );
    let unset = common::script_config("unset", "demo_mcp_server.py", &[]).with_env(
        "X",
        format!("{ENV_SECRET}${{SKALD_SECRETS_TEST_UNSET_VARIABLE}}"),
    );
    assert_err_clean(
        "an interpolation error",
        &McpServer::connect(&unset, common::test_options()).unwrap_err(),
    );
    assert_logs_clean();
}

#[test]
fn only_named_variables_are_interpolated() {
    // The child sees exactly the value the config names, and `$NAME` or
    // `$(cmd)` are passed through literally, not expanded.
    captured();
    let cfg = McpServerConfig::stdio(
        "interp",
        "sh",
        [
            "-c",
            "printf '%s|%s\\n' \"$A\" \"$B\" >&2; exec python3 \"$0\"",
            &common::repo_path("scripts/demo_mcp_server.py"),
        ],
    )
    .with_env("A", "${SKALD_SECRETS_TEST_VAR}")
    .with_env("B", "$HOME $(id) $$");
    let (ltx, lrx) = crossbeam_channel::unbounded();
    let s = McpServer::connect(&cfg, common::test_options().logs(ltx)).unwrap();
    s.close().unwrap();
    let lines: Vec<String> = lrx.try_iter().map(|l| l.text).collect();
    assert!(
        lines.iter().any(|l| l == "from-the-host|$HOME $(id) $"),
        "{lines:?}"
    );
    // An empty or malformed reference is refused, never expanded to "".
    let bad = McpServerConfig::stdio("interp2", "true", ["x"]).with_env("C", "${}");
    assert!(McpServer::connect(&bad, common::test_options())
        .unwrap_err()
        .to_string()
        .contains("env C"));
}

#[test]
fn http_bearer_token_even_when_the_server_echoes_it() {
    captured();
    let server = http_support::Server::hostile(&[]);
    let (ltx, lrx) = crossbeam_channel::unbounded();
    // A token in the URL reaches ureq's own DEBUG records; only `api_key`
    // is kept out of every output, so the query here holds no secret.
    let cfg =
        McpServerConfig::http("h", format!("{}?token=public", server.url())).with_api_key(API_KEY);
    assert_clean("Debug of the config", &format!("{cfg:?}"));
    let s = McpHttpServer::connect(&cfg, http_support::test_options().logs(ltx)).unwrap();
    assert_clean("Debug of the client", &format!("{s:?}"));
    assert_eq!(
        s.call_tool("echo", json!({"text": "x"})).unwrap().to_text(),
        "x"
    );
    // The token did reach the server, as a header.
    let init = &server.posts_of("initialize")[0];
    assert_eq!(
        init["headers"]["authorization"],
        json!(format!("Bearer {API_KEY}"))
    );
    // A 401 whose body quotes the header back must not carry it further.
    let e = s.call_tool("auth_echo", json!({})).unwrap_err();
    assert!(
        matches!(
            e,
            McpError::Http {
                status: Some(401),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("invalid credentials"), "{e}");
    assert_err_clean("a 401 error", &e);
    // The key straddling the cut of the quoted body (4 KiB): redacted
    // before the cut, so not even its first half is quoted.
    for pad in [4096 - 16, 4096 - 7, 4096 - 30] {
        let e = s
            .call_tool("auth_echo_at", json!({"pad": pad}))
            .unwrap_err();
        assert_err_clean(&format!("a 401 error with the key at {pad}"), &e);
        assert!(!e.to_string().contains(&API_KEY[..6]), "{e}");
    }
    assert_err_clean(
        "a 500 error",
        &s.call_tool("error500", json!({})).unwrap_err(),
    );
    s.close().unwrap();
    for l in lrx.try_iter() {
        assert_clean("the log channel", &format!("{l:?}"));
    }
    // Nothing listens any more: a connection error names no secret either.
    drop(server);
    let e = McpHttpServer::connect(
        &cfg,
        http_support::test_options().start_timeout(Duration::from_secs(5)),
    )
    .unwrap_err();
    assert_err_clean("a connection error", &e);
    assert_logs_clean();
}

#[test]
fn manager_store_files_and_listings() {
    captured();
    let dir = tempdir();
    let http = http_support::Server::hostile(&[]);
    let mut mc = ManagerConfig::in_dir(&dir.0);
    mc.client = common::test_options().elicitation_handler(accept_secret);
    let m = McpManager::open(mc).unwrap();
    let stdio = common::script_config("elicit", "elicitation_demo_mcp.py", &[])
        .with_env("SKALD_TEST_SECRET", "${SKALD_SECRETS_TEST_ENV}");
    m.register(stdio).unwrap();
    m.register(
        McpServerConfig::http("remote", http.url()).with_api_key("${SKALD_SECRETS_TEST_KEY}"),
    )
    .unwrap();
    let r = m.call("mcp__elicit__sudo", json!({})).unwrap();
    assert_eq!(r.to_wire(), format!("accepted: {} chars", ELICITED.len()));
    // The modern era asks through InputRequiredResult rounds and through
    // an input_required task (tasks/update): the value crosses the wire in
    // a request's params, and still reaches no log, file or error.
    m.register(common::script_config(
        "modern",
        "demo_mcp_server.py",
        &["--era", "modern"],
    ))
    .unwrap();
    let r = m
        .call("mcp__modern__mrtr", json!({"rounds": 2, "quiet": true}))
        .unwrap();
    let n = ELICITED.len();
    assert_eq!(
        r.to_wire(),
        format!(r#"mrtr : rounds=2 q1=accept:{{"v": {n}}} q2=accept:{{"v": {n}}}"#)
    );
    let r = m
        .call("mcp__modern__task_job", json!({"ask": true, "quiet": true}))
        .unwrap();
    assert_eq!(
        r.to_wire(),
        format!("job done, {n} chars after 2 polls and 1 updates")
    );
    let e = m.call("mcp__remote__auth_echo", json!({})).unwrap_err();
    assert_err_clean("a manager call error", &e);
    for info in m.list().unwrap() {
        assert_clean("Debug of McpServerInfo", &format!("{info:?}"));
        assert_clean("McpServerInfo::to_json", &info.to_json().to_string());
    }
    assert_clean("Debug of the manager", &format!("{m:?}"));
    assert_clean("errors()", &format!("{:?}", m.errors()));
    assert_clean(
        "render_mcp_list",
        &m.render_mcp_list(&Default::default()).unwrap(),
    );
    for ev in m.store().pending_events(10_000).unwrap() {
        assert_clean("the events table", &format!("{ev:?}"));
    }
    m.close().unwrap();
    // Interpolated values were stored as `${VAR}`: no file under the data
    // directory holds the secrets themselves — not the database, its WAL,
    // nor any log file.
    assert_dir_clean(&dir.0);
    assert_logs_clean();
}
