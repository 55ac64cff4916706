//! Store tests that need crate internals: databases at earlier schema
//! versions, and failures injected on the store's own connection.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::Connection;
use serde_json::json;

use super::migrate::{current_version, migrate_to, LATEST_VERSION, MIGRATIONS};
use super::*;

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "skald-store-unit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn config(&self) -> StoreConfig {
        StoreConfig::new(self.0.join("store.db"), &self.0)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn event(server: &str, n: usize) -> McpNotification {
    McpNotification {
        server: server.into(),
        method: "event/test".into(),
        params: json!({ "n": n }),
    }
}

fn is_store_error(e: &McpError) -> bool {
    matches!(e, McpError::Store { .. })
}

#[test]
fn store_opens_a_database_at_every_earlier_version() {
    for start in 0..=LATEST_VERSION {
        let tmp = TempDir::new();
        let cfg = tmp.config();
        {
            let mut conn = Connection::open(&cfg.db_path).unwrap();
            migrate_to(&mut conn, MIGRATIONS, start).unwrap();
            if start >= 1 {
                conn.execute_batch(
                    "INSERT INTO mcp_servers (name, transport, command, args, env, created_at, updated_at)
                       VALUES ('old', 'stdio', 'python3', '[\"s.py\"]', '{\"K\":\"${V}\"}',
                               '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z');
                     INSERT INTO mcp_servers (name, transport, url, created_at, updated_at)
                       VALUES ('legacy', 'sse', 'https://h/mcp', '2025-01-01 00:00:00', '2025-01-01 00:00:00');
                     INSERT INTO mcp_events (server, method, params, received_at)
                       VALUES ('old', 'event/x', '{\"a\":1}', '2025-01-01 00:00:00');",
                )
                .unwrap();
            }
        }
        let store = Store::open(cfg.clone()).unwrap();
        if start >= 1 {
            let old = store.get_server("old").unwrap().expect("row kept");
            assert_eq!(old.args, ["s.py"]);
            assert_eq!(old.env.get("K").map(String::as_str), Some("${V}"));
            let legacy = store.get_server("legacy").unwrap().unwrap();
            // 'sse' once was an alias of 'http'; it now names the HTTP+SSE
            // transport, which is what such a row's server speaks.
            assert_eq!(legacy.transport, crate::McpTransport::Sse);
            let pending = store.pending_events(10).unwrap();
            assert_eq!(pending.len(), 1);
            assert_eq!(pending[0].params, json!({"a": 1}));
        }
        // Every table of the latest schema is usable.
        store.insert_event(event("s", 1)).unwrap();
        assert!(store.grant_session("sess", "gmail").unwrap());
        assert!(store.grant_stack("7", "config").unwrap());
        store.close().unwrap();
        let conn = Connection::open(&cfg.db_path).unwrap();
        assert_eq!(
            current_version(&conn).unwrap(),
            LATEST_VERSION,
            "from {start}"
        );
    }
}

#[test]
fn store_refuses_a_newer_database() {
    let tmp = TempDir::new();
    let cfg = tmp.config();
    Store::open(cfg.clone()).unwrap().close().unwrap();
    {
        let conn = Connection::open(&cfg.db_path).unwrap();
        conn.execute(
            "INSERT INTO mcp_schema_migrations VALUES (?1, '9999_future', 't')",
            [LATEST_VERSION + 1],
        )
        .unwrap();
    }
    let e = Store::open(cfg).unwrap_err();
    assert!(is_store_error(&e), "{e:?}");
    assert!(e.to_string().contains("newer"), "{e}");
}

#[test]
fn full_disk_is_an_error_not_a_panic_and_nothing_is_silently_lost() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    // The database may not grow past its current size: a full disk.
    store.exec("PRAGMA max_page_count = 1").unwrap();
    let big = "x".repeat(4096);
    let mut failure = None;
    for i in 0..1000 {
        let mut ev = event("s", i);
        ev.params = json!({ "pad": big });
        if let Err(e) = store.insert_event(ev) {
            failure = Some(e);
            break;
        }
    }
    let e = failure.expect("the database never filled up");
    assert!(is_store_error(&e), "{e:?}");
    assert!(e.to_string().contains("full"), "{e}");

    // Fire-and-forget events in a failing batch are counted and reported.
    let before = store.stats().events_failed;
    let tx = store.events_sender();
    for i in 0..10 {
        let mut ev = event("s", i);
        ev.params = json!({ "pad": big });
        tx.send(ev).unwrap();
    }
    let e = store.flush().unwrap_err();
    assert!(is_store_error(&e), "{e:?}");
    assert_eq!(store.stats().events_failed, before + 10);
    let e = store
        .upsert_server(&McpServerConfig::http("h", "https://h/mcp").with_api_key("k".repeat(9000)))
        .unwrap_err();
    assert!(is_store_error(&e), "{e:?}");

    // The store thread survived and recovers once there is room again.
    store.list_servers().unwrap();
    store.exec("PRAGMA max_page_count = 1000000").unwrap();
    let id = store.insert_event(event("s", 1)).unwrap();
    assert!(store.get_event(id).unwrap().is_some());
    store.close().unwrap();
}

#[test]
fn read_only_database_is_an_error_not_a_panic() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let before = store.insert_event(event("s", 0)).unwrap();
    store.exec("PRAGMA query_only = 1").unwrap();
    let e = store.insert_event(event("s", 1)).unwrap_err();
    assert!(is_store_error(&e), "{e:?}");
    assert!(e.to_string().contains("readonly"), "{e}");
    assert!(store
        .upsert_server(&McpServerConfig::stdio("a", "c", ["x"]))
        .is_err());
    assert!(store.mark_processed(&[before]).is_err());
    assert!(store.grant_session("s", "g").is_err());
    // Reads still work.
    assert_eq!(store.pending_events(10).unwrap().len(), 1);
    store.exec("PRAGMA query_only = 0").unwrap();
    store.insert_event(event("s", 2)).unwrap();
    assert_eq!(store.pending_events(10).unwrap().len(), 2);
    assert_eq!(store.stats().events_failed, 1);
    store.close().unwrap();
}

#[test]
fn a_batch_mixing_waiters_and_fire_and_forget_is_one_transaction() {
    let tmp = TempDir::new();
    let mut cfg = tmp.config();
    // Long enough that only the waiter (or the barrier) triggers the commit.
    cfg.flush_interval = Duration::from_secs(60);
    let store = Store::open(cfg).unwrap();
    let tx = store.events_sender();
    for i in 0..100 {
        tx.send(event("ff", i)).unwrap();
    }
    let t0 = store.stats().transactions;
    store.insert_event(event("w", 0)).unwrap();
    let stats = store.stats();
    // Every send completed before the blocking insert, so the store drained
    // all 100 queued events into the waiter's batch: one commit.
    assert_eq!(stats.transactions - t0, 1, "{stats:?}");
    assert_eq!(stats.events_written, 101);
    assert_eq!(stats.largest_event_batch, 101);
    store.close().unwrap();
}

// ---- event retention ---------------------------------------------------------

fn capped(tmp: &TempDir, retention: EventRetention) -> StoreConfig {
    let mut cfg = tmp.config();
    cfg.event_retention = retention;
    cfg
}

fn log_text(tmp: &TempDir, server: &str) -> String {
    fs::read_to_string(log_file_path(&tmp.0, server)).unwrap_or_default()
}

#[test]
fn pending_events_past_the_per_server_cap_are_refused_counted_and_logged() {
    let tmp = TempDir::new();
    let mut r = EventRetention::unlimited();
    r.pending_per_server = EventCap::new(10, u64::MAX);
    let store = Store::open(capped(&tmp, r)).unwrap();
    let tx = store.events_sender();
    for i in 0..50 {
        tx.send(event("flood", i)).unwrap();
    }
    tx.send(event("quiet", 0)).unwrap();
    store.flush().unwrap();
    let pending = store.pending_events(usize::MAX).unwrap();
    let flood: Vec<_> = pending.iter().filter(|e| e.server == "flood").collect();
    // The oldest are kept, the newest refused.
    assert_eq!(flood.len(), 10);
    assert!(flood
        .iter()
        .map(|e| e.params["n"].as_u64().unwrap())
        .eq(0..10));
    assert_eq!(pending.len(), 11, "another server is not affected");
    let stats = store.stats();
    assert_eq!(stats.events_refused, 40, "{stats:?}");
    assert_eq!(stats.events_written, 11);
    // A blocking insert gets a typed error.
    let e = store.insert_event(event("flood", 99)).unwrap_err();
    assert!(
        matches!(e, McpError::Backpressure { ref server, .. } if server == "flood"),
        "{e:?}"
    );
    assert_eq!(store.stats().events_refused, 41);
    // One lifecycle line for the episode, not one per event.
    let log = log_text(&tmp, "flood");
    assert_eq!(log.matches("refusing new events").count(), 1, "{log}");
    assert!(
        log.contains("[lifecycle]") && log.contains("cap is 10 events"),
        "{log}"
    );
    assert!(!log_text(&tmp, "quiet").contains("refusing"));
    // Processing one makes room for one; the episode's count is logged.
    store.mark_processed(&[flood[0].id]).unwrap();
    store.insert_event(event("flood", 100)).unwrap();
    store.flush().unwrap();
    let log = log_text(&tmp, "flood");
    assert!(
        log.contains("accepting new events again; 41 were refused"),
        "{log}"
    );
    store.close().unwrap();
}

#[test]
fn the_total_pending_cap_and_byte_caps_bind() {
    let tmp = TempDir::new();
    let mut r = EventRetention::unlimited();
    r.pending_total = EventCap::new(25, u64::MAX);
    // event("big", n) is "event/test" plus {"n":n}: 17 bytes for n < 10,
    // 18 after; 17 of them fit in 300.
    r.pending_per_server = EventCap::new(u64::MAX, 300);
    let store = Store::open(capped(&tmp, r)).unwrap();
    let tx = store.events_sender();
    for i in 0..20 {
        tx.send(event("big", i)).unwrap();
    }
    for s in ["a", "b"] {
        for i in 0..10 {
            tx.send(event(s, i)).unwrap();
        }
    }
    store.flush().unwrap();
    let pending = store.pending_events(usize::MAX).unwrap();
    let count = |s: &str| pending.iter().filter(|e| e.server == s).count();
    assert_eq!(count("big"), 17, "the byte cap holds");
    assert_eq!((count("a"), count("b")), (8, 0));
    assert_eq!(pending.len(), 25, "the total cap holds");
    assert_eq!(store.stats().events_refused, 40 - 25);
    assert!(log_text(&tmp, "b").contains("all servers together"));
    store.close().unwrap();
}

#[test]
fn processed_events_are_pruned_oldest_first_per_server_and_in_total() {
    let tmp = TempDir::new();
    let mut r = EventRetention::unlimited();
    r.processed_per_server = EventCap::new(32, u64::MAX);
    r.processed_total = EventCap::new(48, u64::MAX);
    let store = Store::open(capped(&tmp, r)).unwrap();
    let mut ids = Vec::new();
    for i in 0..100 {
        ids.push(store.insert_event(event("a", i)).unwrap());
    }
    // Marked in several transactions, as a host does.
    for chunk in ids.chunks(7) {
        store.mark_processed(chunk).unwrap();
    }
    let left = store.recent_events(usize::MAX).unwrap();
    assert!(left.len() <= 32 && left.len() >= 30, "{} kept", left.len());
    // The newest are the ones kept.
    assert_eq!(left.last().unwrap().id, *ids.last().unwrap());
    assert!(left.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(left[0].id, ids[100 - left.len()]);
    assert!(store.get_event(ids[0]).unwrap().is_none());
    assert_eq!(store.stats().events_pruned, 100 - left.len() as u64);

    // A second server: together past the total cap, the oldest of all go.
    let mut b = Vec::new();
    for i in 0..30 {
        b.push(store.insert_event(event("b", i)).unwrap());
    }
    store.mark_processed(&b).unwrap();
    let all = store.recent_events(usize::MAX).unwrap();
    assert!(all.len() <= 48, "{} kept", all.len());
    assert!(
        all.iter().filter(|e| e.server == "b").count() == 30,
        "b's are the newest"
    );
    // Pending events are never pruned.
    let p = store.insert_event(event("a", 1000)).unwrap();
    assert!(store.get_event(p).unwrap().is_some());
    store.close().unwrap();
}

#[test]
fn usage_survives_a_reopen_and_lowered_caps_apply_at_open() {
    let tmp = TempDir::new();
    let mut r = EventRetention::unlimited();
    r.pending_per_server = EventCap::new(5, u64::MAX);
    let store = Store::open(capped(&tmp, r)).unwrap();
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(store.insert_event(event("a", i)).unwrap());
    }
    store.close().unwrap();
    // Reopened: the five pending events count against the cap.
    let store = Store::open(capped(&tmp, r)).unwrap();
    assert!(store.insert_event(event("a", 5)).is_err());
    store.mark_processed(&ids).unwrap();
    store.close().unwrap();
    // Reopened with a processed cap below what is stored: pruned at once.
    r.processed_per_server = EventCap::new(2, u64::MAX);
    let store = Store::open(capped(&tmp, r)).unwrap();
    assert_eq!(store.stats().events_pruned, 3);
    let left: Vec<_> = store
        .recent_events(10)
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(left, ids[3..]);
    store.close().unwrap();
}

#[test]
fn a_refusal_still_going_on_at_shutdown_is_logged_with_its_count() {
    let tmp = TempDir::new();
    let mut r = EventRetention::unlimited();
    r.pending_per_server = EventCap::new(1, u64::MAX);
    let store = Store::open(capped(&tmp, r)).unwrap();
    let tx = store.events_sender();
    for i in 0..4 {
        tx.send(event("a", i)).unwrap();
    }
    store.close().unwrap();
    let log = log_text(&tmp, "a");
    assert!(log.contains("3 events were refused at the cap"), "{log}");
}

#[test]
fn a_server_row_keeps_inherit_env() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let cfg = McpServerConfig::stdio("wide", "python3", ["s.py"]).with_inherit_env(true);
    store.upsert_server(&cfg).unwrap();
    store
        .upsert_server(&McpServerConfig::stdio("narrow", "python3", ["s.py"]))
        .unwrap();
    assert!(store.get_server("wide").unwrap().unwrap().inherit_env);
    assert!(!store.get_server("narrow").unwrap().unwrap().inherit_env);
    store.close().unwrap();
}
