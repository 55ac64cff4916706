//! `SseParser` on arbitrary bytes fed in arbitrary splits: never panics,
//! never dispatches an event larger than its limit, and the events do not
//! depend on where the stream was split.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::sse::SseParser;

const MAX: usize = 256;

fn run(
    chunks: &[&[u8]],
) -> (
    Vec<Result<(String, Vec<u8>, Option<String>), ()>>,
    Option<String>,
) {
    let mut p = SseParser::new(MAX);
    let mut out = Vec::new();
    for c in chunks {
        p.feed(c);
        while let Some(ev) = p.next_event() {
            out.push(ev.map(|e| (e.event, e.data, e.id)).map_err(|_| ()));
        }
    }
    p.finish();
    while let Some(ev) = p.next_event() {
        out.push(ev.map(|e| (e.event, e.data, e.id)).map_err(|_| ()));
    }
    (out, p.last_event_id().map(str::to_owned))
}

fuzz_target!(|data: &[u8]| {
    // The first byte chooses the split points.
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let whole = run(&[body]);
    let step = usize::from(seed % 7) + 1;
    let chunks: Vec<&[u8]> = body.chunks(step).collect();
    let split = run(&chunks);
    assert_eq!(whole, split, "events depend on the split (step {step})");
    for e in whole.0.iter().flatten() {
        assert!(
            e.1.len() <= MAX,
            "event of {} bytes passed the limit",
            e.1.len()
        );
    }
});
