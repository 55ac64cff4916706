//! Store throughput: events persisted per second (and log lines written).
//!
//! ```text
//! cargo run --release --example store_bench [EVENTS]
//! ```
//!
//! Runs in a fresh temporary directory, removed at the end. Each scenario
//! times from the first send to the return of `flush()` (everything
//! committed), so the figure is events *persisted* per second.
//!
//! The throughput scenarios run with `EventRetention::unlimited()`: every
//! event is still checked against the caps (the same code path), but none
//! binds, so all of them are written. The last scenario floods one server
//! past the default caps and measures how fast the surplus is refused.

use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use skald_mcp::{
    EventRetention, LogTag, McpLogLine, McpNotification, Store, StoreConfig, StoreStats,
};

fn event(server: &str, i: u64) -> McpNotification {
    McpNotification {
        server: server.to_string(),
        method: "event/new_email".to_string(),
        params: json!({
            "id": i,
            "from": "someone@example.test",
            "subject": "Quarterly report",
            "labels": ["INBOX", "UNREAD"],
        }),
    }
}

fn report(name: &str, n: u64, elapsed: Duration, before: StoreStats, after: StoreStats) {
    let secs = elapsed.as_secs_f64();
    println!(
        "{name:<44} {n:>9} in {:>8.1} ms = {:>10.0} /s   ({} transactions, largest batch {})",
        secs * 1e3,
        n as f64 / secs,
        after.transactions - before.transactions,
        after.largest_event_batch,
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 1_000_000,
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("skald-store-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = StoreConfig::new(dir.join("bench.db"), &dir);
    config.event_retention = EventRetention::unlimited();
    let store = Store::open(config)?;
    println!(
        "store_bench: {total} events per scenario, database in {}",
        dir.display()
    );

    // 1. One producer on the fire-and-forget channel.
    let before = store.stats();
    let t = Instant::now();
    let tx = store.events_sender();
    let producer = thread::spawn(move || {
        for i in 0..total {
            if tx.send(event("gmail", i)).is_err() {
                break;
            }
        }
    });
    producer.join().map_err(|_| "producer panicked")?;
    store.flush()?;
    report(
        "channel, 1 producer",
        total,
        t.elapsed(),
        before,
        store.stats(),
    );

    // 2. Four producers on the channel.
    let before = store.stats();
    let t = Instant::now();
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let tx = store.events_sender();
            let server = format!("srv{p}");
            thread::spawn(move || {
                for i in 0..total / 4 {
                    if tx.send(event(&server, i)).is_err() {
                        break;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().map_err(|_| "producer panicked")?;
    }
    store.flush()?;
    report(
        "channel, 4 producers",
        total / 4 * 4,
        t.elapsed(),
        before,
        store.stats(),
    );

    // 3. Blocking insert_event (acknowledged after commit) from 16 threads:
    // throughput comes from group commit.
    let threads = 16u64;
    let per = (total / 10 / threads).max(1);
    let before = store.stats();
    let t = Instant::now();
    let writers: Vec<_> = (0..threads)
        .map(|w| {
            let h = store.handle();
            thread::spawn(move || {
                for i in 0..per {
                    h.insert_event(event(&format!("w{w}"), i))?;
                }
                Ok::<_, skald_mcp::McpError>(())
            })
        })
        .collect();
    for w in writers {
        w.join().map_err(|_| "writer panicked")??;
    }
    report(
        "insert_event (blocking), 16 threads",
        per * threads,
        t.elapsed(),
        before,
        store.stats(),
    );

    // 4. Log lines.
    let before = store.stats();
    let t = Instant::now();
    let logs = store.log_sender();
    for i in 0..total {
        logs.send(McpLogLine::now(
            "chatty",
            LogTag::Stderr,
            format!("INFO: request {i} handled in 3 ms"),
        ))?;
    }
    store.flush()?;
    let after = store.stats();
    println!(
        "{:<44} {:>9} in {:>8.1} ms = {:>10.0} /s   ({} rotations)",
        "log lines, 1 producer",
        after.log_lines_written - before.log_lines_written,
        t.elapsed().as_secs_f64() * 1e3,
        (after.log_lines_written - before.log_lines_written) as f64 / t.elapsed().as_secs_f64(),
        after.log_rotations - before.log_rotations,
    );

    let stats = store.stats();
    store.close()?;
    println!(
        "total: {} events written, {} failed, {} transactions",
        stats.events_written, stats.events_failed, stats.transactions
    );

    // 5. A flood past the default caps (a fresh database): the first
    // STORE_MAX_PENDING_EVENTS_PER_SERVER are written, the rest refused.
    let flood_dir = dir.join("flood");
    let store = Store::open(StoreConfig::new(flood_dir.join("flood.db"), &flood_dir))?;
    let before = store.stats();
    let t = Instant::now();
    let tx = store.events_sender();
    for i in 0..total {
        tx.send(event("flood", i))?;
    }
    store.flush()?;
    let elapsed = t.elapsed();
    let after = store.stats();
    let db_bytes = std::fs::metadata(flood_dir.join("flood.db"))?.len()
        + std::fs::metadata(flood_dir.join("flood.db-wal")).map_or(0, |m| m.len());
    println!(
        "{:<44} {total:>9} in {:>8.1} ms = {:>10.0} /s   ({} written, {} refused, database {:.1} MiB)",
        "flood past the default caps, 1 producer",
        elapsed.as_secs_f64() * 1e3,
        total as f64 / elapsed.as_secs_f64(),
        after.events_written - before.events_written,
        after.events_refused - before.events_refused,
        db_bytes as f64 / (1024.0 * 1024.0),
    );
    store.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
