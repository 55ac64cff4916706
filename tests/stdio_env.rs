//! The environment a stdio server starts with: the allowlist and its
//! configured `env`, not the host's secrets; the whole environment only
//! when asked (`McpServerConfig::inherit_env`, `ClientOptions::inherit_env`,
//! the CLI's `--inherit-env`).
//!
//! The host variable is planted in the environment of a copy of this test
//! binary (through `Command::env`), never with `std::env::set_var` in a
//! process whose other threads read the environment.

mod common;

use std::process::Command;

use common::*;
use serde_json::{json, Value};
use skald_mcp::{McpCallResult, McpServer, McpServerClient, McpServerConfig};

const PLANTED: &str = "SKALD_ENV_TEST_PLANTED_SECRET";
const PLANTED_VALUE: &str = "planted-host-secret-4711";
const CHILD: &str = "SKALD_ENV_TEST_CHILD";

/// The environment the hostile `env` server reports.
fn server_env(cfg: &McpServerConfig, opts: skald_mcp::ClientOptions) -> Value {
    let s = McpServer::connect(cfg, opts).expect("env server starts");
    let env = match s.call_tool("env", json!({})).expect("env answered") {
        McpCallResult::Text(t) => serde_json::from_str(&t).expect("env is JSON text"),
        McpCallResult::Json { value, .. } => value,
        other => panic!("env returned {other:?}"),
    };
    s.close().unwrap();
    env
}

fn env_server() -> McpServerConfig {
    script_config("envsrv", "hostile_mcp_server.py", &["env"])
}

/// Runs in the copy of this binary that has the planted variable.
#[test]
fn child_checks() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    assert_eq!(std::env::var(PLANTED).unwrap(), PLANTED_VALUE);

    // Default: the allowlist and the configured env only.
    let env = server_env(
        &env_server().with_env("CONFIGURED", "${SKALD_ENV_TEST_PLANTED_SECRET}"),
        test_options(),
    );
    assert!(
        env.get(PLANTED).is_none(),
        "the host's secret leaked: {env}"
    );
    assert!(env.get(CHILD).is_none(), "{env}");
    assert_eq!(
        env["CONFIGURED"], PLANTED_VALUE,
        "a ${{VAR}} reference is passed"
    );
    assert_eq!(
        env["HOME"].as_str(),
        std::env::var("HOME").ok().as_deref(),
        "HOME is allowlisted"
    );
    // PATH too (a pyenv shim, as `python3` may be, puts its own entries
    // in front).
    let path = std::env::var("PATH").unwrap();
    assert!(
        env["PATH"].as_str().is_some_and(|p| p.ends_with(&path)),
        "{env}"
    );

    // Per server: the whole environment.
    let env = server_env(&env_server().with_inherit_env(true), test_options());
    assert_eq!(env[PLANTED], PLANTED_VALUE);

    // For every server: the option.
    let env = server_env(&env_server(), test_options().inherit_env(true));
    assert_eq!(env[PLANTED], PLANTED_VALUE);

    // A host may widen the allowlist instead.
    let env = server_env(
        &env_server(),
        test_options().env_allowlist(["PATH", PLANTED]),
    );
    assert_eq!(env[PLANTED], PLANTED_VALUE);
    assert!(env.get("HOME").is_none(), "{env}");
}

#[test]
fn a_host_variable_reaches_a_stdio_server_only_when_asked() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_checks", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env(PLANTED, PLANTED_VALUE)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

/// The CLI: `add --inherit-env` is stored with the server; the global
/// `--inherit-env` applies to a direct connection.
#[test]
fn the_cli_passes_the_host_environment_only_with_inherit_env() {
    let dir = std::env::temp_dir().join(format!("skald-env-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("mcp.db");
    let script = repo_path("scripts/hostile_mcp_server.py");
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_skald-mcp"))
            .arg("--db")
            .arg(&db)
            .args(args)
            .env(PLANTED, PLANTED_VALUE)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let direct = ["connect", "call", "env", "--", "python3", &script, "env"];
    assert!(!cli(&direct).contains(PLANTED_VALUE));
    let mut wide = vec!["--inherit-env"];
    wide.extend(direct);
    assert!(cli(&wide).contains(PLANTED_VALUE));

    cli(&["add", "narrow", "--", "python3", &script, "env"]);
    cli(&[
        "add",
        "wide",
        "--inherit-env",
        "--",
        "python3",
        &script,
        "env",
    ]);
    assert!(!cli(&["call", "narrow", "env"]).contains(PLANTED_VALUE));
    assert!(cli(&["call", "wide", "env"]).contains(PLANTED_VALUE));
    let _ = std::fs::remove_dir_all(&dir);
}
