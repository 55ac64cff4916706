//! `CreateTaskResult::parse` on arbitrary JSON: never panics, and the poll
//! interval and deadline derived from it are bounded.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::limits::{TASK_POLL_MAX, TASK_POLL_MIN};
use skald_mcp::{
    clamp_poll_interval, poll_deadline, CreateTaskResult,
};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Some(t) = CreateTaskResult::parse(&v) {
        let p = clamp_poll_interval(t.poll_interval);
        assert!((TASK_POLL_MIN..=TASK_POLL_MAX).contains(&p));
        let _ = poll_deadline(t.ttl);
        let _ = (t.status.as_str(), t.status.is_terminal());
    }
});
