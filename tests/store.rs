//! The store through its public API: event order and status, batching,
//! log files (format, rotation, hostile names), server rows, grants,
//! shutdown, errors, a SIGKILL crash test, and event retention against a
//! real flooding server.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use skald_mcp::store::log_dir;
use skald_mcp::{
    EventCap, EventId, EventRetention, EventStatus, LogLevel, LogTag, McpError, McpLogLine,
    McpNotification, McpServerConfig, Store, StoreConfig, StoreHandle,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "skald-store-it-{}-{}",
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

    /// The configuration without event caps, for tests of batching and
    /// durability that send more events than the default caps keep.
    fn unlimited(&self) -> StoreConfig {
        let mut c = self.config();
        c.event_retention = EventRetention::unlimited();
        c
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn ev(server: &str, n: u64) -> McpNotification {
    McpNotification {
        server: server.into(),
        method: format!("event/{server}"),
        params: json!({ "n": n }),
    }
}

fn n_of(e: &skald_mcp::StoredEvent) -> u64 {
    e.params["n"].as_u64().unwrap()
}

/// Polls `f` until it holds or `limit` passes; true if it held.
fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn handle_is_clone_send_sync() {
    fn check<T: Clone + Send + Sync + 'static>() {}
    check::<StoreHandle>();
}

#[test]
fn events_from_several_servers_come_back_in_arrival_order() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let t0 = SystemTime::now() - Duration::from_millis(1);
    let tx = store.events_sender();
    let servers = ["gmail", "gcal", "whatsapp"];
    let mut sent = Vec::new();
    for i in 0..300u64 {
        let s = servers[(i * 7 % 3) as usize];
        // Mix the fire-and-forget channel and the blocking insert: both
        // are one arrival order.
        if i % 10 == 0 {
            store.insert_event(ev(s, i)).unwrap();
        } else {
            tx.send(ev(s, i)).unwrap();
        }
        sent.push((s, i));
    }
    let pending = store.pending_events(1000).unwrap();
    let got: Vec<_> = pending
        .iter()
        .map(|e| (e.server.as_str(), n_of(e)))
        .collect();
    let want: Vec<_> = sent.iter().map(|&(s, i)| (s, i)).collect();
    assert_eq!(got, want);
    assert!(pending.windows(2).all(|w| w[0].id < w[1].id));
    for e in &pending {
        assert_eq!(e.status, EventStatus::Pending);
        assert_eq!(e.processed_at, None);
        assert_eq!(e.method, format!("event/{}", e.server));
        assert!(e.received_at >= t0 && e.received_at <= SystemTime::now());
    }
    // The limit takes the oldest.
    let first10 = store.pending_events(10).unwrap();
    assert_eq!(first10, pending[..10]);

    // Processing: pending → processed, exactly once.
    let done: Vec<EventId> = pending[..150].iter().map(|e| e.id).collect();
    assert_eq!(store.mark_processed(&done).unwrap(), 150);
    assert_eq!(store.mark_processed(&done).unwrap(), 0, "already processed");
    assert_eq!(store.mark_processed(&[EventId(999_999)]).unwrap(), 0);
    let rest = store.pending_events(1000).unwrap();
    assert_eq!(rest, pending[150..]);
    let e = store.get_event(done[0]).unwrap().unwrap();
    assert_eq!(e.status, EventStatus::Processed);
    let at = e.processed_at.expect("processed_at set");
    assert!(at >= e.received_at);
    assert_eq!(store.get_event(EventId(999_999)).unwrap(), None);
    store.close().unwrap();
}

#[test]
fn concurrent_producers_keep_their_own_order() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let per = 5_000u64;
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let tx = store.events_sender();
            let h = store.handle();
            thread::spawn(move || {
                let s = format!("srv{p}");
                for i in 0..per {
                    if i % 500 == 0 {
                        h.insert_event(ev(&s, i)).unwrap();
                    } else {
                        tx.send(ev(&s, i)).unwrap();
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let all = store.pending_events(usize::MAX).unwrap();
    assert_eq!(all.len() as u64, 4 * per);
    let mut by_server: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for e in &all {
        by_server.entry(&e.server).or_default().push(n_of(e));
    }
    for (s, ns) in by_server {
        assert_eq!(ns, (0..per).collect::<Vec<_>>(), "{s} out of order");
    }
    store.close().unwrap();
}

#[test]
fn a_burst_of_100k_events_lands_in_few_transactions_and_none_is_lost() {
    const N: u64 = 100_000;
    let tmp = TempDir::new();
    let store = Store::open(tmp.unlimited()).unwrap();
    let before = store.stats();
    let started = Instant::now();
    let tx = store.events_sender();
    let producer = thread::spawn(move || {
        for i in 0..N {
            tx.send(ev("burst", i)).unwrap();
        }
    });
    producer.join().unwrap();
    store.flush().unwrap();
    let elapsed = started.elapsed();
    let stats = store.stats();
    let txs = stats.transactions - before.transactions;
    eprintln!(
        "100k burst: {txs} transactions, largest batch {}, {elapsed:?}",
        stats.largest_event_batch
    );
    assert_eq!(stats.events_written - before.events_written, N);
    assert_eq!(stats.events_failed, 0);
    assert!(txs * 100 < N, "{txs} transactions for {N} events");
    let all = store.pending_events(usize::MAX).unwrap();
    assert_eq!(all.len() as u64, N);
    assert!(all.iter().map(n_of).eq(0..N), "lost or reordered events");
    let ids: HashSet<_> = all.iter().map(|e| e.id).collect();
    assert_eq!(ids.len() as u64, N);
    store.close().unwrap();
}

#[test]
fn a_trickle_is_committed_within_the_flush_bound() {
    let tmp = TempDir::new();
    let mut cfg = tmp.config();
    cfg.flush_interval = Duration::from_millis(20);
    let store = Store::open(cfg).unwrap();
    let tx = store.events_sender();
    for round in 1..=3u64 {
        let t = Instant::now();
        tx.send(ev("slow", round)).unwrap();
        // No flush, no query: only the flush interval commits it.
        assert!(
            eventually(Duration::from_secs(5), || store.stats().events_written
                == round),
            "event {round} not committed without a barrier"
        );
        let waited = t.elapsed();
        assert!(waited < Duration::from_secs(2), "{waited:?}");
    }
    store.close().unwrap();
}

fn read_texts(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| l[38..].to_string())
        .collect()
}

fn dir_names(p: &Path) -> BTreeSet<String> {
    fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn log_lines_have_the_seed_format() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let logs = store.log_sender();
    logs.send(McpLogLine::now("fmt", LogTag::Stderr, "INFO: server ready"))
        .unwrap();
    logs.send(McpLogLine::now(
        "fmt",
        LogTag::Level(LogLevel::Warning),
        "scraper: rate limit approaching",
    ))
    .unwrap();
    logs.send(McpLogLine::now(
        "fmt",
        LogTag::Lifecycle,
        "failed to start: command not found",
    ))
    .unwrap();
    store.flush().unwrap();
    let path = store.log_path("fmt");
    assert_eq!(path, log_dir(&tmp.0).join("fmt.log"));
    assert_eq!(path, tmp.0.join("logs/mcp/fmt.log"));
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let suffixes = [
        " [stderr]     INFO: server ready",
        " [warning]    scraper: rate limit approaching",
        " [lifecycle]  failed to start: command not found",
    ];
    for (line, suffix) in lines.iter().zip(suffixes) {
        let (ts, rest) = line.split_at(24);
        assert_eq!(rest, suffix);
        // 2026-07-03T12:34:56.789Z
        let b = ts.as_bytes();
        assert!(
            ts.ends_with('Z') && b[4] == b'-' && b[10] == b'T' && b[19] == b'.',
            "{ts}"
        );
        assert!(ts[20..23].bytes().all(|c| c.is_ascii_digit()), "{ts}");
    }
    assert_eq!(store.stats().log_lines_written, 3);
    store.close().unwrap();
}

#[test]
fn rotation_keeps_exactly_one_backup_and_loses_no_line_at_the_boundary() {
    let tmp = TempDir::new();
    let line = |i: u64| McpLogLine::now("chatty", LogTag::Stderr, format!("line {i:06}"));
    let one = skald_mcp::store::format_log_line(&line(0)).len() as u64;
    let mut cfg = tmp.config();
    cfg.log_max_bytes = 50 * one;
    let store = Store::open(cfg).unwrap();
    let logs = store.log_sender();
    let cur = store.log_path("chatty");
    let bak = PathBuf::from(format!("{}.1", cur.display()));
    let texts = |r: std::ops::Range<u64>| r.map(|i| format!("line {i:06}")).collect::<Vec<_>>();

    for i in 0..80 {
        logs.send(line(i)).unwrap();
    }
    store.flush().unwrap();
    assert_eq!(store.stats().log_rotations, 1);
    assert_eq!(read_texts(&bak), texts(0..50));
    assert_eq!(read_texts(&cur), texts(50..80));

    // More rotations: the backup is replaced, never multiplied, and the
    // two files hold a gapless tail.
    for i in 80..230 {
        logs.send(line(i)).unwrap();
    }
    store.flush().unwrap();
    assert_eq!(store.stats().log_rotations, 4);
    let mut both = read_texts(&bak);
    both.extend(read_texts(&cur));
    assert_eq!(both, texts(150..230));
    assert!(fs::metadata(&bak).unwrap().len() <= 50 * one);
    assert!(fs::metadata(&cur).unwrap().len() <= 50 * one);
    assert_eq!(
        dir_names(&log_dir(&tmp.0)),
        ["chatty.log", "chatty.log.1"]
            .map(String::from)
            .into_iter()
            .collect()
    );
    store.close().unwrap();
}

#[test]
fn hostile_server_names_stay_inside_the_log_root() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let long = "y".repeat(300);
    let hostile = [
        "../../etc/x",
        "a\0b",
        long.as_str(),
        ".",
        "..",
        "",
        "/abs/path",
        "a/../../b",
        "..\\..\\win",
        "ü🙂",
        "-rf",
    ];
    let logs = store.log_sender();
    for (i, name) in hostile.iter().enumerate() {
        logs.send(McpLogLine::now(
            *name,
            LogTag::Lifecycle,
            format!("hostile {i}"),
        ))
        .unwrap();
    }
    store.flush().unwrap();
    let dir = log_dir(&tmp.0).canonicalize().unwrap();
    let mut expected = BTreeSet::new();
    for (i, name) in hostile.iter().enumerate() {
        let p = store.log_path(name);
        let file = p.file_name().unwrap().to_str().unwrap().to_string();
        assert!(file.len() <= 128 + ".log".len(), "{file}");
        assert!(!file.starts_with('.'), "{file}");
        assert!(file.ends_with(".log"), "{file}");
        let canon = p
            .canonicalize()
            .unwrap_or_else(|e| panic!("{name:?} → {p:?}: {e}"));
        assert_eq!(
            canon.parent(),
            Some(dir.as_path()),
            "{name:?} escaped to {canon:?}"
        );
        assert!(
            read_texts(&p).contains(&format!("hostile {i}")),
            "{name:?}: {:?}",
            read_texts(&p)
        );
        expected.insert(file);
    }
    assert_eq!(
        expected.len(),
        hostile.len(),
        "two hostile names share a file"
    );
    // Nothing else was created: not in the log directory, not beside the
    // database, not above the root.
    assert_eq!(dir_names(&dir), expected);
    let root: BTreeSet<String> = dir_names(&tmp.0)
        .into_iter()
        .filter(|n| !n.starts_with("store.db"))
        .collect();
    assert_eq!(root, BTreeSet::from(["logs".to_string()]));
    assert_eq!(
        dir_names(&tmp.0.join("logs")),
        BTreeSet::from(["mcp".to_string()])
    );
    store.close().unwrap();
}

#[test]
fn server_rows_round_trip() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let mut gcal = McpServerConfig::stdio("gcal", "python3", ["scripts/gcal_mcp_server.py"])
        .with_env("TOKEN", "${GCAL_TOKEN}")
        .with_env("MODE", "rw");
    gcal.cwd = Some(PathBuf::from("/srv/skald"));
    gcal.description = Some("Google Calendar access".into());
    gcal.friendly_name = Some("Google Calendar".into());
    let tavily = McpServerConfig::http("tavily", "https://mcp.tavily.test/mcp")
        .with_api_key("${TAVILY_API_KEY}");
    store.upsert_server(&tavily).unwrap();
    store.upsert_server(&gcal).unwrap();
    assert_eq!(store.get_server("gcal").unwrap().as_ref(), Some(&gcal));
    assert_eq!(
        store.list_servers().unwrap(),
        vec![gcal.clone(), tavily.clone()],
        "sorted by name"
    );

    // Update in place.
    let mut gcal2 = gcal.clone();
    gcal2.args.push("--verbose".into());
    gcal2.env.remove("MODE");
    gcal2.description = None;
    store.upsert_server(&gcal2).unwrap();
    assert_eq!(store.get_server("gcal").unwrap(), Some(gcal2.clone()));
    assert_eq!(store.list_servers().unwrap().len(), 2);

    assert!(store.set_enabled("gcal", false).unwrap());
    assert!(!store.get_server("gcal").unwrap().unwrap().enabled);
    assert!(store.set_enabled("gcal", true).unwrap());
    assert!(store.get_server("gcal").unwrap().unwrap().enabled);
    assert!(!store.set_enabled("nope", false).unwrap());

    assert!(store.delete_server("tavily").unwrap());
    assert!(!store.delete_server("tavily").unwrap());
    assert_eq!(store.get_server("tavily").unwrap(), None);

    // Invalid configurations are refused before they reach the database.
    let bad = McpServerConfig::stdio("../x", "c", ["a"]);
    assert!(matches!(
        store.upsert_server(&bad),
        Err(McpError::Config { .. })
    ));
    let no_url = McpServerConfig {
        url: None,
        ..McpServerConfig::http("h", "https://h")
    };
    assert!(store.upsert_server(&no_url).is_err());
    assert_eq!(store.list_servers().unwrap(), vec![gcal2.clone()]);
    store.close().unwrap();

    // Persisted across a reopen, api_key stored as given.
    let store = Store::open(tmp.config()).unwrap();
    assert_eq!(store.list_servers().unwrap(), vec![gcal2]);
    store.upsert_server(&tavily).unwrap();
    assert_eq!(
        store
            .get_server("tavily")
            .unwrap()
            .unwrap()
            .api_key
            .as_deref(),
        Some("${TAVILY_API_KEY}")
    );
    store.close().unwrap();
}

#[test]
fn grants_by_session_and_by_stack() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    assert!(store.grant_session("s1", "gmail").unwrap());
    assert!(!store.grant_session("s1", "gmail").unwrap(), "idempotent");
    assert!(store.grant_session("s1", "config").unwrap());
    assert!(store.grant_session("s2", "tavily").unwrap());
    assert_eq!(store.session_grants("s1").unwrap(), ["config", "gmail"]);
    assert_eq!(store.session_grants("s2").unwrap(), ["tavily"]);
    assert!(store.session_grants("none").unwrap().is_empty());
    assert!(store.revoke_session("s1", "config").unwrap());
    assert!(!store.revoke_session("s1", "config").unwrap());
    assert_eq!(store.session_grants("s1").unwrap(), ["gmail"]);

    // Stack grants are separate from session grants, even with equal ids.
    assert!(store.grant_stack("s1", "gcal").unwrap());
    assert!(store.grant_stack("s1", "whatsapp").unwrap());
    assert!(store.grant_stack("42", "gcal").unwrap());
    assert_eq!(store.stack_grants("s1").unwrap(), ["gcal", "whatsapp"]);
    assert_eq!(store.session_grants("s1").unwrap(), ["gmail"]);
    assert!(store.revoke_stack("42", "gcal").unwrap());
    assert_eq!(store.delete_stack_grants("s1").unwrap(), 2);
    assert_eq!(store.delete_stack_grants("s1").unwrap(), 0);
    assert!(store.stack_grants("s1").unwrap().is_empty());
    assert_eq!(store.session_grants("s1").unwrap(), ["gmail"]);
    assert_eq!(store.delete_session_grants("s2").unwrap(), 1);
    store.close().unwrap();

    let store = Store::open(tmp.config()).unwrap();
    assert_eq!(store.session_grants("s1").unwrap(), ["gmail"], "persisted");
    store.close().unwrap();
}

#[test]
fn shutdown_drains_what_is_queued_and_later_calls_fail_cleanly() {
    let tmp = TempDir::new();
    let mut cfg = tmp.config();
    // Nothing would be committed by the timer during this test.
    cfg.flush_interval = Duration::from_secs(60);
    let store = Store::open(cfg.clone()).unwrap();
    #[cfg(target_os = "linux")]
    assert!(store_thread_exists(), "no thread named skald-mcp-store");
    let handle = store.handle();
    let tx = store.events_sender();
    let logs = store.log_sender();
    for i in 0..1000 {
        tx.send(ev("q", i)).unwrap();
        logs.send(McpLogLine::now("q", LogTag::Stderr, format!("queued {i}")))
            .unwrap();
    }
    store.close().unwrap();

    // After shutdown: errors, never panics or hangs.
    let e = handle.insert_event(ev("q", 1)).unwrap_err();
    assert!(matches!(e, McpError::Store { .. }), "{e:?}");
    assert!(e.to_string().contains("shut down"), "{e}");
    assert!(handle.pending_events(1).is_err());
    assert!(handle.flush().is_err());
    assert!(
        tx.send(ev("q", 1)).is_err(),
        "send after shutdown must fail"
    );
    assert!(logs
        .send(McpLogLine::now("q", LogTag::Stderr, "x"))
        .is_err());
    handle.shutdown().unwrap();
    handle.shutdown().unwrap();

    let lines = read_texts(&log_file_path_of(&tmp, "q"));
    assert_eq!(lines.len(), 1000);
    assert_eq!(lines[999], "queued 999");
    let store = Store::open(cfg).unwrap();
    let all = store.pending_events(usize::MAX).unwrap();
    assert!(all.iter().map(n_of).eq(0..1000));
}

#[test]
fn shutdown_racing_with_writers_neither_hangs_nor_loses_an_ack() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.unlimited()).unwrap();
    let (done_tx, done_rx) = crossbeam_channel::unbounded();
    let (started_tx, started_rx) = crossbeam_channel::bounded(8);
    for w in 0..8 {
        let h = store.handle();
        let done = done_tx.clone();
        let started = started_tx.clone();
        thread::spawn(move || {
            let mut acked = Vec::new();
            let mut error = None;
            for i in 0..100_000 {
                match h.insert_event(ev(&format!("r{w}"), i)) {
                    Ok(id) => acked.push(id),
                    Err(e) => {
                        error = Some(e.to_string());
                        break;
                    }
                }
                if i == 10 {
                    let _ = started.send(());
                }
            }
            let _ = done.send((acked, error));
        });
    }
    drop(done_tx);
    for _ in 0..8 {
        started_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    }
    store.close().unwrap();
    let mut acked = Vec::new();
    for _ in 0..8 {
        let (ids, error) = done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a writer hung across shutdown");
        let error = error.expect("writer finished 100k inserts before shutdown");
        assert!(error.contains("shut down"), "{error}");
        acked.extend(ids);
    }
    let store = Store::open(tmp.unlimited()).unwrap();
    for id in acked {
        assert!(store.get_event(id).unwrap().is_some(), "acked {id} lost");
    }
    store.close().unwrap();
}

fn log_file_path_of(tmp: &TempDir, server: &str) -> PathBuf {
    skald_mcp::store::log_file_path(&tmp.0, server)
}

#[cfg(target_os = "linux")]
fn store_thread_exists() -> bool {
    fs::read_dir("/proc/self/task").unwrap().any(|t| {
        fs::read_to_string(t.unwrap().path().join("comm"))
            .is_ok_and(|c| c.trim_end() == skald_mcp::limits::STORE_THREAD_NAME)
    })
}

#[test]
fn dropping_the_store_commits_and_joins() {
    let tmp = TempDir::new();
    let mut cfg = tmp.config();
    cfg.flush_interval = Duration::from_secs(60);
    let store = Store::open(cfg.clone()).unwrap();
    let handle = store.handle();
    let tx = store.events_sender();
    for i in 0..100 {
        tx.send(ev("d", i)).unwrap();
    }
    drop(store);
    assert!(handle.insert_event(ev("d", 0)).is_err());
    let store = Store::open(cfg).unwrap();
    assert_eq!(store.pending_events(usize::MAX).unwrap().len(), 100);
}

#[test]
fn open_errors_are_errors() {
    let tmp = TempDir::new();
    // Not a database.
    let garbage = tmp.0.join("garbage.db");
    fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let e = Store::open(StoreConfig::new(&garbage, &tmp.0)).unwrap_err();
    assert!(matches!(e, McpError::Store { .. }), "{e:?}");
    // The SQLite error is kept as the source, not only rendered.
    let source = std::error::Error::source(&e).unwrap_or_else(|| panic!("no source: {e:?}"));
    assert!(
        source.downcast_ref::<rusqlite::Error>().is_some(),
        "{source:?}"
    );
    // The database's directory cannot be created: a file is in the way.
    let file = tmp.0.join("a-file");
    fs::write(&file, b"x").unwrap();
    let e = Store::open(StoreConfig::new(file.join("db.sqlite"), &tmp.0)).unwrap_err();
    assert!(matches!(e, McpError::Io { .. }), "{e:?}");
    // The log directory cannot be created.
    let e = Store::open(StoreConfig::new(tmp.0.join("ok.db"), &file)).unwrap_err();
    assert!(matches!(e, McpError::Io { .. }), "{e:?}");
}

#[test]
fn a_log_write_failure_is_reported_and_does_not_stop_other_files() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    // A directory where the file should be: opening it fails, even as root.
    fs::create_dir_all(store.log_path("blocked")).unwrap();
    let logs = store.log_sender();
    logs.send(McpLogLine::now("blocked", LogTag::Stderr, "lost"))
        .unwrap();
    logs.send(McpLogLine::now("fine", LogTag::Stderr, "kept"))
        .unwrap();
    let e = store.flush().unwrap_err();
    assert!(matches!(e, McpError::Io { .. }), "{e:?}");
    let stats = store.stats();
    assert_eq!((stats.log_lines_failed, stats.log_lines_written), (1, 1));
    assert_eq!(read_texts(&store.log_path("fine")), ["kept"]);
    // Events are unaffected.
    store.insert_event(ev("e", 0)).unwrap();
    store.close().unwrap();
}

// ---- crash test -----------------------------------------------------------

const CRASH_CHILD_ENV: &str = "SKALD_STORE_CRASH_CHILD_DIR";
const CRASH_ACKS_BEFORE_KILL: usize = 2_000;

fn crash_config(dir: &Path) -> StoreConfig {
    let mut c = StoreConfig::new(dir.join("crash.db"), dir);
    // Durability, not retention, is tested: the stream passes the caps.
    c.event_retention = EventRetention::unlimited();
    c
}

/// The child side of [`sigkill_loses_no_acknowledged_event`]: a no-op unless
/// the parent re-executed this test binary with the environment variable set.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CRASH_CHILD_ENV) else {
        return;
    };
    let store = Store::open(crash_config(Path::new(&dir))).unwrap();
    // Never outlive a parent that failed to kill us.
    let deadline = Instant::now() + Duration::from_secs(60);
    // A fire-and-forget stream keeps transactions big and busy when the
    // kill lands. Every 64th of its events is a blocking insert, which
    // paces it to the store's speed (an unpaced flood would only make the
    // acknowledged writers wait behind a full queue).
    let tx = store.events_sender();
    let h = store.handle();
    thread::spawn(move || {
        for i in 0.. {
            if Instant::now() > deadline {
                break;
            }
            if i % 64 == 63 {
                let id = h.insert_event(ev("stream", i)).unwrap();
                println!("ACK {id} stream {i}");
            } else if tx.send(ev("stream", i)).is_err() {
                break;
            }
        }
    });
    // Server rows: each printed only after upsert_server returned.
    let h = store.handle();
    thread::spawn(move || {
        let mut i = 0u64;
        while Instant::now() < deadline {
            let cfg = McpServerConfig::stdio(format!("srv{i}"), "cmd", [format!("arg{i}")])
                .with_env("N", i.to_string());
            h.upsert_server(&cfg).unwrap();
            println!("SROW {i}");
            i += 1;
        }
    });
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let h = store.handle();
            thread::spawn(move || {
                let server = format!("acked{w}");
                let mut i = 0;
                while Instant::now() < deadline {
                    let id = h.insert_event(ev(&server, i)).unwrap();
                    // Printed only after insert_event returned: committed.
                    println!("ACK {id} {server} {i}");
                    i += 1;
                }
            })
        })
        .collect();
    for w in writers {
        let _ = w.join();
    }
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg(unix)]
#[test]
fn sigkill_loses_no_acknowledged_event() {
    use std::os::unix::process::ExitStatusExt;

    let tmp = TempDir::new();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CRASH_CHILD_ENV, &tmp.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().unwrap();
    let (line_tx, line_rx) = crossbeam_channel::unbounded();
    let reader = thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if line_tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });

    let parse = |l: &str| -> Option<(i64, String, u64)> {
        let mut it = l.strip_prefix("ACK ")?.split(' ');
        let id = it.next()?.parse().ok()?;
        let server = it.next()?.to_string();
        let n = it.next()?.parse().ok()?;
        it.next().is_none().then_some((id, server, n))
    };
    let mut acks = Vec::new();
    let mut rows: Vec<u64> = Vec::new();
    let mut take = |l: &str, acks: &mut Vec<(i64, String, u64)>| {
        acks.extend(parse(l));
        rows.extend(l.strip_prefix("SROW ").and_then(|n| n.parse::<u64>().ok()));
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while acks.len() < CRASH_ACKS_BEFORE_KILL {
        let left = deadline.saturating_duration_since(Instant::now());
        match line_rx.recv_timeout(left) {
            Ok(l) => take(&l, &mut acks),
            Err(e) => panic!("child gave {} acks, then {e:?}", acks.len()),
        }
    }
    // SIGKILL: no destructor, no shutdown, no flush runs in the child.
    let pid = i32::try_from(child.0.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = child.0.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    // Acks printed before the kill that we have not read yet.
    loop {
        match line_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(l) => take(&l, &mut acks),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            Err(e) => panic!("child stdout not closed after SIGKILL: {e:?}"),
        }
    }
    reader.join().unwrap();
    assert!(acks.len() >= CRASH_ACKS_BEFORE_KILL);

    let store = Store::open(crash_config(&tmp.0)).unwrap();
    let mut seen = HashSet::new();
    for (id, server, n) in &acks {
        assert!(seen.insert(*id), "id {id} acknowledged twice");
        let e = store
            .get_event(EventId(*id))
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged event {id} lost"));
        assert_eq!((&e.server, n_of(&e)), (server, *n), "event {id}");
    }
    let total = store.pending_events(usize::MAX).unwrap().len();
    assert!(!rows.is_empty(), "no server row was acknowledged");
    for i in &rows {
        let cfg = store
            .get_server(&format!("srv{i}"))
            .unwrap()
            .unwrap_or_else(|| panic!("acknowledged server row srv{i} lost"));
        assert_eq!(cfg.args, [format!("arg{i}")]);
        assert_eq!(cfg.env["N"], i.to_string());
    }
    eprintln!(
        "crash test: {} acknowledged events and {} server rows all present; {total} events in the database",
        acks.len(),
        rows.len()
    );
    store.close().unwrap();
    let conn = rusqlite::Connection::open(tmp.0.join("crash.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

// ---- read-only files and directories -----------------------------------------

const RO_CHILD_ENV: &str = "SKALD_STORE_RO_CHILD_DIR";

/// What opening a store under `dir` gives when the database file, or the
/// directory holding it, is read-only. Run as a user that permissions bind
/// (the parent test re-executes this binary as `nobody` when it is root).
fn read_only_checks(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let chmod =
        |p: &Path, mode: u32| fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    let expect_clear = |e: McpError, path: &Path| {
        let text = e.to_string();
        assert!(
            matches!(e, McpError::Store { .. } | McpError::Io { .. }),
            "{e:?}"
        );
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(
            text.contains("read-only") || text.contains("readonly"),
            "the error does not say what is wrong: {text}"
        );
    };

    // A database file that is read-only.
    let a = dir.join("file");
    fs::create_dir_all(&a).unwrap();
    let db = a.join("store.db");
    let store = Store::open(StoreConfig::new(&db, &a)).unwrap();
    store.insert_event(ev("s", 0)).unwrap();
    store.close().unwrap();
    chmod(&db, 0o444);
    let e = open_err(StoreConfig::new(&db, &a), "a read-only file is refused");
    expect_clear(e, &db);

    // A directory that is read-only: no database can be created in it.
    let b = dir.join("dir");
    fs::create_dir_all(&b).unwrap();
    chmod(&b, 0o555);
    let db = b.join("store.db");
    let e = open_err(
        StoreConfig::new(&db, dir.join("logs-b")),
        "a read-only directory is refused",
    );
    expect_clear(e, &db);

    // A read-only directory holding an existing database (WAL needs its
    // side files next to it).
    let c = dir.join("dir-with-db");
    fs::create_dir_all(&c).unwrap();
    let db = c.join("store.db");
    let store = Store::open(StoreConfig::new(&db, dir.join("logs-c"))).unwrap();
    store.insert_event(ev("s", 0)).unwrap();
    store.close().unwrap();
    chmod(&c, 0o555);
    let e = open_err(
        StoreConfig::new(&db, dir.join("logs-c")),
        "a database in a read-only directory is refused",
    );
    expect_clear(e, &db);
}

fn open_err(config: StoreConfig, what: &str) -> McpError {
    match Store::open(config) {
        Ok(_) => panic!("{what}: the store opened"),
        Err(e) => e,
    }
}

/// The child side of [`read_only_database_or_directory_is_a_clear_error`].
#[test]
fn read_only_child() {
    if let Some(dir) = std::env::var_os(RO_CHILD_ENV) {
        read_only_checks(Path::new(&dir));
    }
}

#[cfg(unix)]
#[test]
fn read_only_database_or_directory_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let tmp = TempDir::new();
    // SAFETY: a plain syscall without arguments.
    if unsafe { libc::geteuid() } != 0 {
        read_only_checks(&tmp.0);
        return;
    }
    // Root ignores permissions: run the checks as `nobody`.
    fs::set_permissions(&tmp.0, fs::Permissions::from_mode(0o777)).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "read_only_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(RO_CHILD_ENV, &tmp.0)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && text.contains("Permission denied") && !text.contains("panicked") {
        eprintln!("skipping: the test binary is not executable as nobody: {text}");
        return;
    }
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    // Let the parent remove what nobody created.
    for d in ["dir", "dir-with-db"] {
        let _ = fs::set_permissions(tmp.0.join(d), fs::Permissions::from_mode(0o755));
    }
}

/// A new database is the user's alone: the file (and the -wal file SQLite
/// creates beside it) 0600, a directory the store creates 0700.
#[test]
fn new_databases_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = TempDir::new();
    let dir = tmp.0.join("fresh").join("data");
    let db = dir.join("mcp.db");
    let store = Store::open(StoreConfig::new(&db, &tmp.0)).unwrap();
    store
        .upsert_server(&McpServerConfig::stdio("p", "true", Vec::<String>::new()))
        .unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600, "{}", db.display());
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    let wal = dir.join("mcp.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
    store.close().unwrap();
}

// ---- event retention against a real flooding server ---------------------------

/// Connects the hostile `notify_flood` server as `name`, its notifications
/// and log lines going to `store`.
fn flood_server(name: &str, store: &Store) -> skald_mcp::McpServer {
    let cfg = common::script_config(name, "hostile_mcp_server.py", &["notify_flood"]);
    let opts = common::test_options()
        .notifications(store.events_sender())
        .logs(store.log_sender());
    skald_mcp::McpServer::connect(&cfg, opts).expect("hostile server starts")
}

fn burst(server: &skald_mcp::McpServer, n: u64, pad: u64) {
    use skald_mcp::McpServerClient;
    let r = server
        .call_tool("burst", json!({"n": n, "pad": pad}))
        .expect("burst answered");
    assert_eq!(common::text(r), format!("burst {n}"));
}

/// A server that floods notifications cannot grow `mcp_events` past the
/// caps: its newest events are refused, counted and reported once in its
/// log; processed ones are pruned oldest first; another server keeps
/// working.
#[test]
fn a_flooding_server_is_held_at_the_caps_and_refusals_are_counted_and_logged() {
    let tmp = TempDir::new();
    let mut cfg = tmp.config();
    cfg.event_retention.pending_per_server = EventCap::new(500, 64 * 1024);
    cfg.event_retention.processed_per_server = EventCap::new(200, u64::MAX);
    let store = Store::open(cfg).unwrap();
    let flood = flood_server("flood", &store);
    let padded = flood_server("padded", &store);

    // Rows: 3000 small events, 500 kept (the oldest), 2500 refused.
    burst(&flood, 3000, 0);
    // Bytes: events of ~1 KiB against a 64 KiB cap.
    burst(&padded, 200, 1000);
    // Every notification was sent to the store before the call's answer
    // was routed; the flush commits them.
    store.flush().unwrap();
    let pending = store.pending_events(usize::MAX).unwrap();
    let of = |s: &str| -> Vec<&skald_mcp::StoredEvent> {
        pending.iter().filter(|e| e.server == s).collect()
    };
    let f = of("flood");
    assert_eq!(f.len(), 500);
    assert!(f
        .iter()
        .map(|e| e.params["i"].as_u64().unwrap())
        .eq(1..=500));
    let p = of("padded");
    let bytes: usize = p
        .iter()
        .map(|e| e.method.len() + e.params.to_string().len())
        .sum();
    assert!(
        bytes <= 64 * 1024 && p.len() >= 60,
        "{} events, {bytes} bytes",
        p.len()
    );
    let refused = 2500 + (200 - p.len() as u64);
    assert_eq!(store.stats().events_refused, refused, "{:?}", store.stats());
    let log = fs::read_to_string(store.log_path("flood")).unwrap();
    assert_eq!(log.matches("refusing new events").count(), 1, "{log}");
    assert!(log.contains("[lifecycle]"), "{log}");
    assert!(fs::read_to_string(store.log_path("padded"))
        .unwrap()
        .contains("refusing new events"));

    // The host catches up: marked processed, pruned to the processed cap.
    let ids: Vec<EventId> = f.iter().map(|e| e.id).collect();
    assert_eq!(store.mark_processed(&ids).unwrap(), 500);
    let kept: Vec<_> = store
        .recent_events(usize::MAX)
        .unwrap()
        .into_iter()
        .filter(|e| e.server == "flood")
        .collect();
    assert!(kept.len() <= 200, "{} processed kept", kept.len());
    assert_eq!(kept.last().unwrap().id, *ids.last().unwrap(), "newest kept");
    assert!(store.stats().events_pruned >= 300);

    // Room again: the next flood is accepted up to the cap, and the end of
    // the first episode is logged with its count.
    burst(&flood, 1000, 0);
    store.flush().unwrap();
    let log = fs::read_to_string(store.log_path("flood")).unwrap();
    assert!(
        log.contains("accepting new events again; 2500 were refused"),
        "{log}"
    );
    assert_eq!(log.matches("refusing new events").count(), 2, "{log}");
    let pending = store.pending_events(usize::MAX).unwrap();
    assert_eq!(pending.iter().filter(|e| e.server == "flood").count(), 500);
    drop((flood, padded));
    store.close().unwrap();
}

/// The HTTP transport a server was found to speak is kept with its row,
/// survives an upsert of its configuration and a reopen, and is absent for
/// servers never connected or not stored.
#[test]
fn the_http_transport_found_is_kept_with_the_row() {
    use skald_mcp::McpTransport;
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let h = store.handle();
    let cfg = McpServerConfig::http("old", "http://127.0.0.1:1/sse");
    h.upsert_server(&cfg).unwrap();
    assert_eq!(h.server_wire("old").unwrap(), None);
    assert!(h.set_server_wire("old", McpTransport::Sse).unwrap());
    assert!(!h.set_server_wire("absent", McpTransport::Sse).unwrap());
    assert_eq!(h.server_wire("absent").unwrap(), None);
    let mut described = cfg.clone();
    described.description = Some("described".into());
    h.upsert_server(&described).unwrap();
    assert_eq!(h.server_wire("old").unwrap(), Some(McpTransport::Sse));
    store.close().unwrap();
    let store = Store::open(tmp.config()).unwrap();
    assert_eq!(
        store.handle().server_wire("old").unwrap(),
        Some(McpTransport::Sse)
    );
    assert!(store
        .handle()
        .set_server_wire("old", McpTransport::Http)
        .unwrap());
    assert_eq!(
        store.handle().server_wire("old").unwrap(),
        Some(McpTransport::Http)
    );
    store.close().unwrap();
}

/// A server's request headers are stored with it (migration 0008), as
/// given (`${VAR}` unresolved), and survive a reopen.
#[test]
fn request_headers_are_kept_with_the_server() {
    let tmp = TempDir::new();
    let store = Store::open(tmp.config()).unwrap();
    let cfg = McpServerConfig::http("hosted", "https://example.invalid/mcp")
        .with_header("X-Api-Key", "${HOSTED_KEY}")
        .with_header("X-Tenant", "acme");
    store.upsert_server(&cfg).unwrap();
    store.close().unwrap();
    let store = Store::open(tmp.config()).unwrap();
    assert_eq!(store.get_server("hosted").unwrap(), Some(cfg));
    store.close().unwrap();
}
