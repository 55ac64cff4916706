//! A lone caller reads its own reply from the server's stdout (see
//! `src/stdio/reader.rs`). These tests check that nothing routed that way is
//! lost, misrouted or left waiting: messages that arrive in the same write
//! as the reply, a flood of progress before it, many callers at once, slow
//! replies past the read window, and the reader thread taking over between
//! calls. Every wait is bounded.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use crossbeam_channel::unbounded;
use serde_json::json;
use skald_mcp::{CallOptions, CancelToken, McpServerClient};

const WAIT: Duration = Duration::from_secs(10);

/// A read window long enough that the caller, not the reader thread, reads
/// what a slow Python server writes.
const LONG_WINDOW: Duration = Duration::from_secs(5);

/// Five hundred progress notifications and the reply in one write: more
/// than a caller's event channel holds, all routed by the caller itself.
/// Nothing is dropped and the caller does not wait on itself.
#[test]
fn progress_flood_before_the_reply_arrives_whole() {
    let s = hostile("one_write", test_options().caller_read_window(LONG_WINDOW)).unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(AtomicUsize::new(0));
    let (seen2, last2) = (Arc::clone(&seen), Arc::clone(&last));
    let opts = CallOptions::new().on_progress(move |p| {
        seen2.fetch_add(1, Ordering::SeqCst);
        last2.store(p.progress as usize, Ordering::SeqCst);
    });
    let t = Instant::now();
    let r = s
        .call_tool_with("pack", json!({"progress": 500}), &opts)
        .expect("the call completes");
    assert_eq!(text(r), "pack");
    assert!(t.elapsed() < WAIT, "took {:?}", t.elapsed());
    assert_eq!(seen.load(Ordering::SeqCst), 500, "every progress reported");
    assert_eq!(last.load(Ordering::SeqCst), 500, "in order, last one last");
}

/// Notifications written right behind the reply, in the same write, are
/// already read when the caller has its reply. They must reach the
/// notification channel without any further input from the server.
#[test]
fn notifications_behind_the_reply_are_routed_without_more_input() {
    let (tx, rx) = unbounded();
    let opts = test_options()
        .caller_read_window(LONG_WINDOW)
        .notifications(tx);
    let s = hostile("one_write", opts).unwrap();
    for round in 0..20 {
        let r = s.call_tool("pack", json!({"after": 3})).unwrap();
        assert_eq!(text(r), "pack");
        for i in 1..=3 {
            let n = rx
                .recv_timeout(WAIT)
                .unwrap_or_else(|_| panic!("round {round}: notification {i} never routed"));
            assert_eq!(n.method, "event/after");
            assert_eq!(n.params["i"], i, "round {round}");
        }
    }
    assert!(rx.try_recv().is_err());
}

/// Notifications that arrive between calls, when no caller reads, are
/// routed by the reader thread.
#[test]
fn notifications_between_calls_are_routed_by_the_reader_thread() {
    let (tx, rx) = unbounded();
    let s = demo(test_options().notifications(tx));
    // A run of quick calls first, so the reader thread is backing off.
    for _ in 0..50 {
        s.call_tool("echo", json!({"text": "warm"})).unwrap();
    }
    // `notify` answers first, then sends the notification after a pause.
    for round in 0..5 {
        let r = s
            .call_tool("notify", json!({"method": "event/late", "delay_ms": 20}))
            .unwrap();
        assert_eq!(text(r), "will notify");
        let n = rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("round {round}: not routed while nobody called"));
        assert_eq!(n.method, "event/late");
    }
}

/// Eight threads with their own payloads on one connection, some with
/// cancel tokens (which never read inline), some without: every reply
/// reaches the caller that asked for it, whether the I/O thread polls
/// without sleeping while replies are due (`io_spin`, default and long)
/// or sleeps at once.
#[test]
fn many_callers_each_get_their_own_reply() {
    for io_spin in [
        skald_mcp::ClientOptions::default().io_spin,
        Duration::ZERO,
        Duration::from_millis(5),
    ] {
        many_callers(test_options().io_spin(io_spin));
    }
}

fn many_callers(opts: skald_mcp::ClientOptions) {
    let s = Arc::new(demo(opts));
    let start = Arc::new(Barrier::new(8));
    let hs: Vec<_> = (0..8)
        .map(|t| {
            let (s, start) = (Arc::clone(&s), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                for i in 0..150 {
                    let want = format!("{t}-{i}");
                    let r = if (t + i) % 3 == 0 {
                        let opts = CallOptions::new().cancel_token(CancelToken::new());
                        s.call_tool_with("echo", json!({"text": want}), &opts)
                    } else {
                        s.call_tool("echo", json!({"text": want}))
                    };
                    assert_eq!(text(r.unwrap()), want);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("caller thread");
    }
    assert_eq!(s.pending_requests(), 0);
}

/// A reply slower than the read window is delivered by the reader thread;
/// one quicker than it by the caller (spinning or sleeping in `poll`); with
/// the window at zero every reply goes through the reader thread. All give
/// the same results.
#[test]
fn replies_past_the_window_and_with_the_window_off() {
    let ms = Duration::from_millis;
    for (window, spin) in [
        (ms(5), ms(1)),
        (ms(5), Duration::ZERO),
        (Duration::ZERO, ms(1)),
    ] {
        let opts = test_options().caller_read_window(window).caller_spin(spin);
        let s = demo(opts);
        let r = s.call_tool("slow", json!({"seconds": 0.05})).unwrap();
        assert_eq!(text(r), "done after 0.05s", "window {window:?}");
        for i in 0..20 {
            let r = s.call_tool("echo", json!({"text": i.to_string()})).unwrap();
            assert_eq!(text(r), i.to_string());
        }
    }
}

/// A server that exits while the I/O thread polls for the replies to
/// several calls without sleeping (a long `io_spin`): every caller gets the
/// typed error at once, not when the spin or the timeout ends.
#[test]
fn server_exit_while_the_io_thread_spins() {
    let opts = test_options()
        .call_timeout(Duration::from_secs(60))
        .caller_read_window(Duration::ZERO)
        .io_spin(Duration::from_secs(30));
    let s = Arc::new(hostile("crash_mid_call", opts).unwrap());
    let start = Arc::new(Barrier::new(3));
    let t = Instant::now();
    let hs: Vec<_> = (0..3)
        .map(|i| {
            let (s, start) = (Arc::clone(&s), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                s.call_tool("echo", json!({"text": i.to_string()}))
            })
        })
        .collect();
    for h in hs {
        let e = h.join().expect("caller thread").unwrap_err();
        assert!(
            matches!(e, skald_mcp::McpError::Disconnected { .. }),
            "{e:?}"
        );
    }
    assert!(t.elapsed() < WAIT, "{:?}", t.elapsed());
}

/// A server that exits while a caller reads its reply: the caller gets the
/// typed error at once, not at its timeout.
#[test]
fn server_exit_while_the_caller_reads() {
    let s = hostile(
        "crash_mid_call",
        test_options().call_timeout(Duration::from_secs(60)),
    )
    .unwrap();
    let t = Instant::now();
    let e = s.call_tool("echo", json!({"text": "x"})).unwrap_err();
    assert!(
        matches!(e, skald_mcp::McpError::Disconnected { .. }),
        "{e:?}"
    );
    assert!(t.elapsed() < WAIT);
}

/// The voluntary and involuntary context switches of this process's thread
/// named `comm`, from `/proc/self/task/*/status`.
fn switches_of(comm: &str) -> u64 {
    for task in std::fs::read_dir("/proc/self/task")
        .expect("/proc")
        .flatten()
    {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if name.trim() != comm {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).expect("status");
        return status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum();
    }
    panic!("no thread named {comm}");
}

/// While a caller reads a slow reply itself, the I/O thread, woken by a
/// message that the caller took (a progress notification, here a quarter
/// of a second before the reply), waits for the caller to hand back
/// instead of waking every millisecond (`READER_BACKOFF`) to look: it woke
/// about 250 times here before. Once the caller leaves, the I/O thread
/// routes what arrives while nobody calls: the hand-back is not lost.
#[test]
fn a_caller_reading_a_slow_reply_does_not_keep_waking_the_io_thread() {
    let (tx, rx) = unbounded();
    let opts = test_options()
        .caller_read_window(LONG_WINDOW)
        .notifications(tx);
    let cfg = script_config("parkio", "demo_mcp_server.py", &[]);
    let s = skald_mcp::McpServer::connect(&cfg, opts).expect("demo server starts");
    // Sent by the server well after the slow call below has ended.
    let r = s
        .call_tool("notify", json!({"method": "event/later", "delay_ms": 1500}))
        .unwrap();
    assert_eq!(text(r), "will notify");
    let progressed = Arc::new(AtomicUsize::new(0));
    let p2 = Arc::clone(&progressed);
    let call = CallOptions::new().on_progress(move |_| {
        p2.fetch_add(1, Ordering::SeqCst);
    });
    let before = switches_of("mcp-parkio-io");
    let r = s
        .call_tool_with("progress", json!({"steps": 2, "interval": 0.25}), &call)
        .unwrap();
    let woke = switches_of("mcp-parkio-io") - before;
    assert_eq!(text(r), "progressed 2");
    assert_eq!(progressed.load(Ordering::SeqCst), 2);
    assert!(
        woke < 60,
        "the I/O thread was switched {woke} times during a 500 ms read"
    );
    let n = rx
        .recv_timeout(WAIT)
        .expect("a notification after a parked read is routed");
    assert_eq!(n.method, "event/later");
}
