//! Quick start: spawn the bundled demo server (dual-era: it speaks MCP
//! 2026-07-28 and 2025-11-25), list its tools, call each one and print what
//! came back.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//! Set `RUST_LOG=mcp_client=debug` to see the server's stderr.

use std::time::Duration;

use serde_json::json;
use skald_mcp::{ClientOptions, McpCallResult, McpError, McpMedia, McpServerConfig};

fn main() -> Result<(), McpError> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo_mcp_server.py");
    let config = McpServerConfig::stdio("demo", "python3", [script, "--era", "dual"]);
    let (events_tx, events_rx) = crossbeam_channel::unbounded();
    let options = ClientOptions::default()
        .start_timeout(Duration::from_secs(30))
        .notifications(events_tx);

    // Whatever the transport; the era is chosen by probing the server.
    let server = skald_mcp::connect(&config, options)?;
    let info = server.initialize()?;
    println!(
        "connected to {} {} ({} era, protocol {})",
        info.server_info.name, info.server_info.version, info.era, info.protocol_version
    );

    let tools = server.list_tools()?;
    println!("\n{} tools:", tools.len());
    for t in &tools {
        println!(
            "  {:<18} {}",
            t.name,
            t.description.as_deref().unwrap_or("")
        );
    }

    let calls = [
        ("echo", json!({"text": "hello from skald-mcp"})),
        ("add", json!({"a": 2, "b": 40})),
        ("image", json!({})),
        ("audio", json!({})),
        ("resource_link", json!({})),
        ("embedded_resource", json!({})),
        ("notify", json!({"params": {"from": "quickstart"}})),
        ("slow", json!({"seconds": 0.2})),
        ("fail", json!({})),
    ];
    println!("\ncalls:");
    for (name, args) in calls {
        print!("  {name:<18} → ");
        match server.call_tool(name, args) {
            Ok(McpCallResult::Text(t)) => println!("text: {t}"),
            Ok(McpCallResult::Json { value, .. }) => println!("json: {value}"),
            Ok(McpCallResult::Media { text, items, .. }) => {
                let kinds: Vec<String> = items
                    .iter()
                    .map(|m| match m {
                        McpMedia::ResourceLink { uri, .. } => format!("resource_link {uri}"),
                        other => format!(
                            "{} {} ({} bytes)",
                            other.kind(),
                            other.mime_type().unwrap_or("?"),
                            other.bytes().map_or(0, <[u8]>::len)
                        ),
                    })
                    .collect();
                println!("media: {kinds:?} {text:?}");
            }
            Ok(other) => println!("{other:?}"),
            Err(McpError::Tool { message, .. }) => println!("tool error: {message}"),
            Err(e) => println!("error: {e}"),
        }
    }

    while let Ok(n) = events_rx.try_recv() {
        println!(
            "\nnotification from {}: {} {}",
            n.server, n.method, n.params
        );
    }
    server.close()?;
    Ok(())
}
