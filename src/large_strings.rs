//! Large string values taken out of a JSON-RPC frame before it is parsed.
//!
//! `serde_json` checks a string for quotes, backslashes and control
//! characters eight bytes at a time and then validates it as UTF-8: a tool
//! result carrying 1 MiB of text took 145 µs to parse, the bulk of the
//! client's own time on such a call. The same checks done here with
//! `memchr2` (vector instructions) for the quotes and backslashes, one
//! vectorisable pass for control characters and the standard library's
//! UTF-8 validation take 90 µs with the copy into the `String`.
//!
//! A string value of at least [`LARGE_STRING_MIN`] bytes with no escape in
//! it is replaced in a copy of the frame (the *skeleton*) by a short
//! placeholder, the skeleton is decoded as usual, and each placeholder is
//! then replaced by its string. Nothing is accepted that `serde_json` would
//! refuse: a string with a control character or invalid UTF-8 is left in
//! place for `serde_json` to report, as is everything outside strings. When
//! anything does not add up (the skeleton does not decode, a placeholder is
//! not found exactly once — say because the server sent a string that looks
//! like one — or a `tools/list` result was kept as text or cut, which
//! would keep placeholders in that text) the caller decodes the frame as it
//! came, so the outcome is always that of decoding the original.
//!
//! [`LARGE_STRING_MIN`]: crate::limits::LARGE_STRING_MIN

use serde_json::Value;

use crate::jsonrpc::{FrameError, Incoming, RequestId};

/// What a placeholder string starts with, before its index. The NUL makes
/// a collision with a real string unlikely; a collision is detected anyway.
const PLACEHOLDER: &str = "\u{0}skald-mcp/large-string:";

/// The same, as it is written in the skeleton's JSON text.
const PLACEHOLDER_JSON: &str = "\\u0000skald-mcp/large-string:";

/// Decodes `bytes` with `decode` after taking its large strings out, or
/// `None` when there are none or the result would not be exactly that of
/// decoding `bytes` itself (see the module's documentation).
pub(crate) fn decode(
    bytes: &[u8],
    min: usize,
    decode: impl FnOnce(&[u8], &mut dyn FnMut(Incoming)) -> Result<(), FrameError>,
) -> Option<Vec<Incoming>> {
    let (skeleton, strings) = extract(bytes, min)?;
    let mut msgs = Vec::with_capacity(1);
    decode(&skeleton, &mut |m| msgs.push(m)).ok()?;
    let mut slots: Vec<Option<String>> = strings.into_iter().map(Some).collect();
    for m in &mut msgs {
        if !restore_message(m, &mut slots) {
            return None;
        }
    }
    slots.iter().all(Option::is_none).then_some(msgs)
}

/// The skeleton of `line` and the strings taken out of it, in order; `None`
/// when no string qualifies.
///
/// One pass over every quote and backslash (`memchr2_iter`), after a quick
/// look that there can be a large string at all
/// ([`may_hold_large_string`]): on a 1.6 MB `tools/list` page with a
/// string every dozen bytes the pass takes 1.2 ms, a tenth of parsing it.
fn extract(line: &[u8], min: usize) -> Option<(Vec<u8>, Vec<String>)> {
    if !may_hold_large_string(line, min) {
        return None;
    }
    let mut out = Vec::new();
    let mut strings = Vec::new();
    // `line[..copied]` is in `out` (or replaced there).
    let mut copied = 0;
    // The opening quote of the string being read, and whether it has an
    // escape so far.
    let mut open: Option<usize> = None;
    let mut escaped = false;
    // The byte after a backslash in a string: escaped, whatever it is.
    let mut skip: Option<usize> = None;
    for p in memchr::memchr2_iter(b'"', b'\\', line) {
        match skip {
            Some(s) if s == p => {
                skip = None;
                continue;
            }
            Some(s) if s < p => skip = None,
            _ => {}
        }
        if line[p] == b'\\' {
            // Outside a string it is invalid JSON, left for the decoder.
            if open.is_some() {
                escaped = true;
                skip = Some(p + 1);
            }
            continue;
        }
        let Some(start) = open.take() else {
            open = Some(p);
            escaped = false;
            continue;
        };
        let text = &line[start + 1..p];
        if escaped || text.len() < min || is_key(line, p + 1) || has_control(text) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(text) else {
            continue;
        };
        out.extend_from_slice(&line[copied..start]);
        out.push(b'"');
        out.extend_from_slice(PLACEHOLDER_JSON.as_bytes());
        out.extend_from_slice(strings.len().to_string().as_bytes());
        out.push(b'"');
        strings.push(text.to_owned());
        copied = p + 1;
    }
    // An unterminated string is left for the decoder to refuse.
    if strings.is_empty() || open.is_some() {
        return None;
    }
    out.extend_from_slice(&line[copied..]);
    Some((out, strings))
}

/// Whether `line` has a run of `min` bytes without a quote, which a string
/// of `min` bytes is. Any such run holds a whole aligned block of `min / 2`
/// bytes, so looking for a quote in each of those is enough: where strings
/// are dense (a `tools/list` page), each search stops after a few bytes,
/// and the precise scan (a microsecond per hundred strings) is skipped.
fn may_hold_large_string(line: &[u8], min: usize) -> bool {
    let half = (min / 2).max(1);
    line.chunks_exact(half)
        .any(|block| memchr::memchr(b'"', block).is_none())
}

/// Whether the string that ended just before `line[at]` is an object key
/// (a colon follows it). Keys stay: only values are put back.
fn is_key(line: &[u8], at: usize) -> bool {
    let rest = line.get(at..).unwrap_or_default();
    rest.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|&b| b == b':')
}

/// Whether `text` holds a byte below 0x20, which JSON does not allow
/// unescaped in a string. In blocks without an early exit, so that the
/// compiler can use vector instructions.
fn has_control(text: &[u8]) -> bool {
    text.chunks(4096)
        .any(|c| c.iter().fold(0u8, |acc, &b| acc | u8::from(b < 0x20)) != 0)
}

/// Puts the strings back into `m`; false when a placeholder has no string
/// (left over, or seen twice) or a `tools/list` result was kept as text or
/// cut (its text would hold placeholders).
fn restore_message(m: &mut Incoming, slots: &mut [Option<String>]) -> bool {
    match m {
        Incoming::Request { id, method, params } => {
            restore_id(id, slots) && restore_string(method, slots) && restore(params, slots)
        }
        Incoming::Notification { method, params } => {
            restore_string(method, slots) && restore(params, slots)
        }
        Incoming::Response { id, outcome } => {
            restore_id(id, slots)
                && match outcome {
                    Ok(result) => {
                        let kept = result.as_object().is_some_and(|o| {
                            o.contains_key(crate::jsonrpc_cap::TOOLS_RAW)
                                || o.contains_key(crate::jsonrpc_cap::TOOLS_CUT)
                        });
                        !kept && restore(result, slots)
                    }
                    Err(e) => {
                        restore_string(&mut e.message, slots)
                            && e.data.as_mut().is_none_or(|d| restore(d, slots))
                    }
                }
        }
    }
}

fn restore_id(id: &mut RequestId, slots: &mut [Option<String>]) -> bool {
    match id {
        RequestId::String(s) => restore_string(s, slots),
        RequestId::Number(_) => true,
    }
}

fn restore(v: &mut Value, slots: &mut [Option<String>]) -> bool {
    match v {
        Value::String(s) => restore_string(s, slots),
        Value::Array(items) => items.iter_mut().all(|x| restore(x, slots)),
        Value::Object(members) => members.values_mut().all(|x| restore(x, slots)),
        Value::Null | Value::Bool(_) | Value::Number(_) => true,
    }
}

/// Replaces a placeholder by its string, taking it from its slot.
fn restore_string(s: &mut String, slots: &mut [Option<String>]) -> bool {
    let Some(index) = s.strip_prefix(PLACEHOLDER) else {
        return true;
    };
    let slot = index.parse::<usize>().ok().and_then(|i| slots.get_mut(i));
    match slot.and_then(Option::take) {
        Some(text) => {
            *s = text;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc;

    const MIN: usize = 16;

    /// Decodes `line` both ways and asserts the same outcome; returns
    /// whether the fast way was taken.
    fn same_as_plain(line: &str) -> bool {
        let plain = jsonrpc::decode_plain_for_tests(line.as_bytes());
        let fast = decode(line.as_bytes(), MIN, jsonrpc::decode_plain_each);
        match (&plain, &fast) {
            (Ok(p), Some(f)) => assert_eq!(p, f, "{line}"),
            (_, None) => {}
            (Err(e), Some(f)) => panic!("plain refused ({e:?}) what the fast way took: {f:?}"),
        }
        fast.is_some()
    }

    #[test]
    fn large_values_are_put_back_where_they_were() {
        let big = "x".repeat(40);
        let other = "é€😀".repeat(10);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{big}"}},{{"type":"text","text":"{other}"}}],"structuredContent":{{"a":["{big}",1,null]}},"isError":false}}}}"#
        );
        assert!(same_as_plain(&line));
        let msgs = decode(line.as_bytes(), MIN, jsonrpc::decode_plain_each).unwrap();
        let Incoming::Response { outcome: Ok(r), .. } = &msgs[0] else {
            panic!()
        };
        assert_eq!(r["content"][1]["text"], other.as_str());
        assert_eq!(r["structuredContent"]["a"][0], big.as_str());
    }

    #[test]
    fn what_is_not_taken_out_decodes_as_sent() {
        let big = "y".repeat(40);
        // Short strings, a string with an escape, a large key.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":"short"}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}\"{big}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}\\"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"{big}" : 1}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}\u0041"}}}}"#),
        ] {
            assert!(!same_as_plain(&line), "nothing to take out of {line}");
        }
    }

    #[test]
    fn every_place_a_string_can_land_gets_it_back() {
        let big = "z".repeat(40);
        for line in [
            format!(
                r#"{{"jsonrpc":"2.0","id":"{big}","method":"{big}","params":{{"p":"{big}"}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{big}"}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"error":{{"code":-1,"message":"{big}","data":["{big}"]}}}}"#
            ),
            format!(
                r#"[{{"jsonrpc":"2.0","id":1,"result":"{big}"}},{{"jsonrpc":"2.0","id":2,"result":{{"t":"{big}"}}}}]"#
            ),
        ] {
            assert!(same_as_plain(&line), "{line}");
        }
    }

    #[test]
    fn what_json_refuses_is_still_refused() {
        let big = "w".repeat(40);
        let ctrl = format!("{big}\u{1}");
        for line in [
            // A raw control character in a large string.
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{ctrl}"}}}}"#),
            // Unterminated.
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}"#),
            // Broken outside the strings.
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}",}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}"}} \ }}"#),
        ] {
            assert!(
                jsonrpc::decode_plain_for_tests(line.as_bytes()).is_err(),
                "{line}"
            );
            assert!(!same_as_plain(&line), "{line}");
        }
        // Invalid UTF-8 in a large string.
        let mut bytes =
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}"}}}}"#).into_bytes();
        let at = bytes.iter().position(|&b| b == b'w').unwrap();
        bytes[at] = 0xff;
        assert!(decode(&bytes, MIN, jsonrpc::decode_plain_each).is_none());
    }

    #[test]
    fn a_string_that_looks_like_a_placeholder_falls_back() {
        let big = "v".repeat(40);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}","b":"\u0000skald-mcp/large-string:0"}}}}"#
        );
        assert!(!same_as_plain(&line));
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}","b":"\u0000skald-mcp/large-string:9"}}}}"#
        );
        assert!(!same_as_plain(&line));
    }

    #[test]
    fn a_tool_list_kept_as_text_falls_back() {
        // The definitions of a `tools/list` result are kept as their text,
        // which would hold the placeholder: decoded as sent instead.
        let big = "d".repeat(40);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"t","description":"{big}","inputSchema":{{"type":"object"}}}}]}}}}"#
        );
        assert!(!same_as_plain(&line));
        let kept = crate::jsonrpc_cap::with_cap(1, usize::MAX, || {
            decode(line.as_bytes(), MIN, jsonrpc::decode_plain_each)
        });
        assert!(kept.is_none());
    }

    #[test]
    fn the_quick_look_finds_every_run_long_enough() {
        // A run of `min` quote-free bytes anywhere, at every alignment.
        let min = 16;
        for start in 0..40 {
            let mut line = vec![b'"'; 80];
            line[start..start + min].fill(b'a');
            assert!(may_hold_large_string(&line, min), "run at {start}");
        }
        // No run of even `min / 2` bytes: no.
        let dense: Vec<u8> = (0..200)
            .map(|i| if i % 7 == 0 { b'"' } else { b'a' })
            .collect();
        assert!(!may_hold_large_string(&dense, min));
        assert!(!may_hold_large_string(b"", min));
    }

    #[test]
    fn control_characters_are_found_anywhere() {
        let mut text = vec![b'a'; 10_000];
        assert!(!has_control(&text));
        for at in [0, 4095, 4096, 9_999] {
            for b in [0u8, 0x1f, b'\n'] {
                text[at] = b;
                assert!(has_control(&text), "{b:#x} at {at}");
            }
            text[at] = 0x7f;
            assert!(!has_control(&text));
            text[at] = b'a';
        }
    }
}
