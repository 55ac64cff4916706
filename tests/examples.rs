//! The examples stay true: each runs to completion and prints what it claims.

use std::process::Command;

fn run_example(name: &str, args: &[&str]) -> String {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} not built (cargo test builds examples)",
        path.display()
    );
    let o = Command::new(&path).args(args).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{name} failed: {:?}\n{out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn quickstart() {
    let out = run_example("quickstart", &[]);
    assert!(out.contains("connected to demo"), "{out}");
    assert!(
        out.contains("echo               → text: hello from skald-mcp"),
        "{out}"
    );
    assert!(out.contains("notification from demo: event/demo"), "{out}");
}

#[test]
fn tasks() {
    let out = run_example("tasks", &[]);
    assert!(
        out.contains("long_job → job done") && out.contains("ended failed: disk on fire"),
        "{out}"
    );
}

#[test]
fn cancel() {
    let out = run_example("cancel", &[]);
    assert!(
        out.contains("cancelled: user pressed stop") && out.contains("echo → still here"),
        "{out}"
    );
}

#[test]
fn elicitation() {
    let out = run_example("elicitation", &[]);
    assert!(
        out.contains("sudo → accepted") && out.contains("confirm → confirmed"),
        "{out}"
    );
}

#[test]
fn manager_once() {
    let out = run_example("manager", &["--once"]);
    assert!(
        out.contains("mcp__demo__add → {\"sum\":42} (json)") && out.contains("closed cleanly"),
        "{out}"
    );
}

#[test]
fn exit_latency() {
    let out = run_example("exit_latency", &["1"]);
    for mode in ["wrapper_exit", "setsid_exit"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(mode) && l.contains("exit → Disconnected p50")),
            "{out}"
        );
    }
}
