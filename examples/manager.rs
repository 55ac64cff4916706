//! The manager embedded in a plain `fn main`: register the demo server,
//! activate it for a session, call a tool, print events — then wait for
//! Ctrl+C (or SIGTERM) and shut everything down cleanly: children killed,
//! the store drained, every thread joined.
//!
//! ```sh
//! cargo run --example manager            # runs until Ctrl+C
//! cargo run --example manager -- --once  # exits after the demo
//! ```

use std::time::Duration;

use serde_json::json;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use skald_mcp::manager::{GrantScope, ManagerConfig, McpManager};
use skald_mcp::{McpError, McpServerConfig};

fn main() -> Result<(), McpError> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let once = std::env::args().any(|a| a == "--once");
    // Installed first: a Ctrl+C that comes while the demo runs, or the
    // moment "running" is printed, is kept for the wait below instead of
    // killing the process (and its servers' cleanup) outright.
    let signals = if once {
        None
    } else {
        Some(
            Signals::new([SIGINT, SIGTERM]).map_err(|source| McpError::Io {
                context: "installing signal handlers".into(),
                source,
            })?,
        )
    };
    let data =
        std::env::temp_dir().join(format!("skald-mcp-manager-example-{}", std::process::id()));

    let mut config = ManagerConfig::in_dir(&data);
    config.client = config.client.start_timeout(Duration::from_secs(30));
    let manager = McpManager::open(config)?;

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo_mcp_server.py");
    let mut demo = McpServerConfig::stdio("demo", "python3", [script]);
    demo.description = Some("Demo tools: echo, add, media".into());
    let tools = manager.register(demo)?;
    println!(
        "registered demo with {tools} tools (data in {})",
        data.display()
    );

    let session = GrantScope::Session("example".into());
    println!(
        "{}",
        manager.activate_tools(&session, &json!({"groups": ["demo"]}))?
    );
    let grants = manager.grants(&session)?;
    println!("{}", manager.render_mcp_list(&grants)?);
    println!(
        "{} tool definitions for the model",
        manager.tools_for(&grants).len()
    );

    let r = manager.call("mcp__demo__add", json!({"a": 20, "b": 22}))?;
    println!("mcp__demo__add → {} ({})", r.to_wire(), r.kind());
    let r = manager.call("mcp__demo__image", json!({}))?;
    println!("mcp__demo__image → {}", r.to_wire());
    manager.call("mcp__demo__notify", json!({"params": {"from": "example"}}))?;
    manager.store().flush()?;
    for e in manager.store().pending_events(10)? {
        println!(
            "event #{} from {}: {} {}",
            e.id.0, e.server, e.method, e.params
        );
    }

    if let Some(mut signals) = signals {
        println!("\nrunning; press Ctrl+C to stop");
        if let Some(sig) = signals.forever().next() {
            println!("signal {sig}: shutting down");
        }
    }
    manager.close()?;
    let _ = std::fs::remove_dir_all(&data);
    println!("closed cleanly");
    Ok(())
}
