//! What a huge tool list costs the client: peak RSS (`VmHWM`) while one
//! stdio server lists 100 000 small tools in one page and in eight pages,
//! against the bytes the server sent.
//!
//! ```text
//! cargo run --release --example tool_list_rss [tools] [pages] [max_tools] [max_tool_list_bytes]
//! ```
//!
//! One scenario per run (memory the allocator keeps from an earlier one
//! would blur the next); `pages` defaults to 1. The peak is reset
//! (`/proc/self/clear_refs`) after connecting, so the line shows what the
//! listing itself cost. Linux only.

use std::time::Instant;

use skald_mcp::{ClientOptions, McpServer, McpServerClient, McpServerConfig};

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn reset_peak() {
    // "5" resets the peak resident set size to the current one.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tools: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let pages: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let max_tools: Option<usize> = args.next().and_then(|a| a.parse().ok());
    let max_bytes: Option<usize> = args.next().and_then(|a| a.parse().ok());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/hostile_mcp_server.py");
    println!("tools listed by the server: {tools}");
    println!(
        "{:>6} {:>10} {:>12} {:>12} {:>12} {:>8} {:>9}",
        "pages", "kept", "wire MiB", "base MiB", "peak MiB", "peak/wire", "time ms"
    );
    {
        let cfg = McpServerConfig::stdio("many", "python3", [script, "many_tools"])
            .with_env("MANY_TOOLS", tools.to_string())
            .with_env("MANY_TOOLS_PAGES", pages.to_string());
        let mut opts = ClientOptions::default();
        if let Some(m) = max_tools {
            opts.max_tools = m;
        }
        if let Some(m) = max_bytes {
            opts.max_tool_list_bytes = m;
        }
        let s = McpServer::connect(&cfg, opts).expect("connects");
        reset_peak();
        let base = status_kib("VmRSS:");
        let t0 = Instant::now();
        let list = s.list_tools_shared().expect("lists");
        let ms = t0.elapsed().as_millis();
        let peak = status_kib("VmHWM:");
        // The server's bytes: every definition as the server wrote it.
        let wire: usize = (0..tools)
            .map(|i| {
                format!(
                    r#"{{"name": "t{i}", "description": "tool number {i}", "inputSchema": {{"type": "object", "properties": {{"x": {{"type": "string"}}}}}}}}, "#
                )
                .len()
            })
            .sum();
        let mib = |kib: u64| kib as f64 / 1024.0;
        let wire_mib = wire as f64 / (1024.0 * 1024.0);
        println!(
            "{pages:>6} {:>10} {wire_mib:>12.1} {:>12.1} {:>12.1} {:>8.1}x {ms:>9}",
            list.len(),
            mib(base),
            mib(peak),
            (mib(peak) - mib(base)) / wire_mib,
        );
        drop(list);
        s.close().expect("closes");
    }
}
