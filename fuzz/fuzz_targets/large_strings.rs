//! The large-string path of the decoder (strings taken out before
//! parsing, found by a scanner fed the frame in pieces) on arbitrary bytes,
//! with a small threshold so that short inputs reach it: it never panics,
//! never takes a frame that `jsonrpc::decode` refuses, and decodes every
//! frame it takes exactly as `jsonrpc::decode` does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use skald_mcp::jsonrpc;

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, frame)) = data.split_first() else {
        return;
    };
    // Threshold 2..=17 bytes, pieces of 1..=16 bytes.
    let min = 2 + usize::from(knobs & 0x0f);
    let step = 1 + usize::from(knobs >> 4);
    if let Some(fast) = jsonrpc::decode_taking_strings(frame, min, step) {
        match jsonrpc::decode(frame) {
            Ok(plain) => assert_eq!(plain, fast),
            Err(e) => panic!("took a frame the decoder refuses ({e:?}): {fast:?}"),
        }
    }
});
