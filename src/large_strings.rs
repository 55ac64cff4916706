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
//! The stdio reader goes further: it feeds each piece of a large frame to
//! a [`Scanner`] as it arrives, which checks and copies the large strings
//! while the server is still writing the rest; once the last byte is in,
//! what is left is the skeleton (1 MiB of tool text: 53 µs from the last
//! byte to the caller's channel, from 174 µs).
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

/// What a placeholder string starts with, before its index. The NUL makes
/// a collision with a real string unlikely; a collision is detected anyway.
const PLACEHOLDER: &str = "\u{0}skald-mcp/large-string:";

/// The same, as it is written in the skeleton's JSON text.
const PLACEHOLDER_JSON: &str = "\\u0000skald-mcp/large-string:";

/// The large strings of a whole frame taken out, or `None` when it has
/// none (see [`Scanner`]).
pub(crate) fn take(bytes: &[u8], min: usize) -> Option<Taken> {
    Scanner::new(min).finish(bytes)
}

/// [`take`] with the frame fed to the scanner in pieces of `step` bytes,
/// as a reader gets it: for the tests and the fuzz target that compare the
/// two.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn take_in_pieces(bytes: &[u8], min: usize, step: usize) -> Option<Taken> {
    let mut scan = Scanner::new(min);
    let step = step.max(1);
    let mut end = 0;
    while end < bytes.len() {
        end = (end + step).min(bytes.len());
        scan.feed(&bytes[..end]);
    }
    scan.finish(bytes)
}

/// A frame with its large strings taken out: the skeleton to decode, and
/// the strings its placeholders stand for.
pub(crate) struct Taken {
    skeleton: Vec<u8>,
    strings: Vec<String>,
}

impl Taken {
    /// The frame with a placeholder for each large string.
    pub(crate) fn skeleton(&self) -> &[u8] {
        &self.skeleton
    }

    /// The strings, to be put back into what the skeleton decoded to.
    pub(crate) fn into_slots(self) -> Slots {
        Slots(self.strings.into_iter().map(Some).collect())
    }
}

/// The strings a decoded skeleton's placeholders stand for, each put back
/// once. Every `put_back_*` is false when a placeholder has no string (it
/// was put back already, or the server sent a look-alike): the frame must
/// then be decoded as it came.
pub(crate) struct Slots(Vec<Option<String>>);

impl Slots {
    /// Whether every string was put back.
    pub(crate) fn all_put_back(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// Puts the strings back everywhere in `v`; false also when `v` is a
    /// `tools/list` result kept as text or cut (its text would hold the
    /// placeholders: see `jsonrpc_cap`).
    pub(crate) fn put_back_result(&mut self, v: &mut Value) -> bool {
        let kept = v.as_object().is_some_and(|o| {
            o.contains_key(crate::jsonrpc_cap::TOOLS_RAW)
                || o.contains_key(crate::jsonrpc_cap::TOOLS_CUT)
        });
        !kept && self.put_back(v)
    }

    /// Puts the strings back everywhere in `v`.
    pub(crate) fn put_back(&mut self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => self.put_back_string(s),
            Value::Array(items) => items.iter_mut().all(|x| self.put_back(x)),
            Value::Object(members) => members.values_mut().all(|x| self.put_back(x)),
            Value::Null | Value::Bool(_) | Value::Number(_) => true,
        }
    }

    /// Replaces `s` by its string when it is a placeholder.
    pub(crate) fn put_back_string(&mut self, s: &mut String) -> bool {
        let Some(index) = s.strip_prefix(PLACEHOLDER) else {
            return true;
        };
        let slot = index.parse::<usize>().ok().and_then(|i| self.0.get_mut(i));
        match slot.and_then(Option::take) {
            Some(text) => {
                *s = text;
                true
            }
            None => false,
        }
    }
}

/// Finds the large strings of a frame, all at once ([`Scanner::finish`])
/// or as its bytes arrive ([`Scanner::feed`], then `finish` when the frame
/// is whole): a reader that feeds it while it waits for the rest of a
/// large reply leaves little to do once the last byte is in.
///
/// It looks at the quotes and backslashes only (`memchr2_iter`), and only
/// once the frame has shown a run of bytes without a quote long enough to
/// be inside a large string ([`may_hold_large_string`]): on a 1.6 MB
/// `tools/list` page, a string every dozen bytes, the full pass takes
/// 1.2 ms, a tenth of parsing it, and the look a few microseconds.
#[derive(Debug)]
pub(crate) struct Scanner {
    min: usize,
    /// Whether the precise scan runs (a quote-free block was seen).
    active: bool,
    /// Bytes looked at for quote-free blocks (a multiple of `min / 2`).
    looked: usize,
    /// Bytes scanned precisely.
    scanned: usize,
    /// The opening quote of the string being read.
    open: Option<usize>,
    /// Whether that string has an escape.
    escaped: bool,
    /// Its text is checked (control characters, UTF-8) up to here; `None`
    /// once it failed a check.
    checked: Option<usize>,
    /// The byte at this offset follows a backslash in a string.
    skip: Option<usize>,
    /// Strings of at least `min` bytes without escapes, checked: the
    /// offsets of their quotes.
    found: Vec<(usize, usize)>,
    /// The text of each of `found`, copied as it was checked.
    texts: Vec<String>,
    /// The text of the string being read, as far as it is checked.
    text: String,
}

impl Scanner {
    /// A scanner for strings of at least `min` bytes.
    pub(crate) fn new(min: usize) -> Scanner {
        Scanner {
            min: min.max(2),
            active: false,
            looked: 0,
            scanned: 0,
            open: None,
            escaped: false,
            checked: None,
            skip: None,
            found: Vec::new(),
            texts: Vec::new(),
            text: String::new(),
        }
    }

    /// Forgets the frame, for the next one.
    pub(crate) fn reset(&mut self) {
        let (mut found, mut texts) = (
            std::mem::take(&mut self.found),
            std::mem::take(&mut self.texts),
        );
        found.clear();
        texts.clear();
        *self = Scanner {
            found,
            texts,
            ..Scanner::new(self.min)
        };
    }

    /// Scans what was appended to `line` since the last call; `line` is the
    /// frame so far (the same bytes as before, and more).
    pub(crate) fn feed(&mut self, line: &[u8]) {
        if line.len() < self.scanned.max(self.looked) {
            // Not the frame it was fed before (misuse): start over.
            self.reset();
        }
        if !self.active {
            let half = self.min / 2;
            let new = &line[self.looked..];
            let whole = new.len() - new.len() % half;
            self.active = may_hold_large_string(&new[..whole], self.min);
            self.looked += whole;
            if !self.active {
                return;
            }
        }
        for p in memchr::memchr2_iter(b'"', b'\\', &line[self.scanned..]) {
            self.quote_or_backslash(line, self.scanned + p);
        }
        self.scanned = line.len();
        // Check the text of a string still open so far, so that its end
        // has little left to check.
        if let (Some(open), false) = (self.open, self.escaped) {
            if line.len() - open > self.min / 2 {
                self.check_text(line, open, line.len());
            }
        }
    }

    /// Scans the rest of `line` (the whole frame) and takes out its large
    /// strings; `None` when there are none. Resets the scanner.
    pub(crate) fn finish(&mut self, line: &[u8]) -> Option<Taken> {
        // A run of `min` bytes holds a whole block, so the partial block
        // at the end that `feed` does not look at cannot hide one.
        self.feed(line);
        let taken = self.take(line);
        self.reset();
        taken
    }

    fn take(&mut self, line: &[u8]) -> Option<Taken> {
        // An unterminated string is left for the decoder to refuse.
        if !self.active || self.open.is_some() {
            return None;
        }
        let mut skeleton = Vec::new();
        let mut strings = Vec::new();
        // `line[..copied]` is in the skeleton (or replaced there).
        let mut copied = 0;
        for (&(open, close), text) in self.found.iter().zip(&mut self.texts) {
            if is_key(line, close + 1) {
                continue;
            }
            debug_assert_eq!(text.as_bytes(), &line[open + 1..close]);
            skeleton.extend_from_slice(&line[copied..open]);
            skeleton.push(b'"');
            skeleton.extend_from_slice(PLACEHOLDER_JSON.as_bytes());
            skeleton.extend_from_slice(strings.len().to_string().as_bytes());
            skeleton.push(b'"');
            strings.push(std::mem::take(text));
            copied = close + 1;
        }
        if strings.is_empty() {
            return None;
        }
        skeleton.extend_from_slice(&line[copied..]);
        Some(Taken { skeleton, strings })
    }

    fn quote_or_backslash(&mut self, line: &[u8], p: usize) {
        match self.skip {
            Some(s) if s == p => {
                self.skip = None;
                return;
            }
            Some(s) if s < p => self.skip = None,
            _ => {}
        }
        if line[p] == b'\\' {
            // Outside a string it is invalid JSON, left for the decoder.
            if self.open.is_some() {
                self.escaped = true;
                self.skip = Some(p + 1);
                self.text.clear();
            }
            return;
        }
        let Some(open) = self.open.take() else {
            self.open = Some(p);
            self.escaped = false;
            self.checked = Some(p + 1);
            self.text.clear();
            return;
        };
        if !self.escaped && p - open > self.min {
            self.check_text(line, open, p);
            if self.checked == Some(p) {
                self.found.push((open, p));
                self.texts.push(std::mem::take(&mut self.text));
            }
        }
        self.text.clear();
    }

    /// Checks the text of the string opened at `open` from where it was
    /// checked up to `end` (exclusive), and copies it to `self.text`: no
    /// control character, UTF-8 (a sequence cut at `end` is checked next
    /// time). The copy is made while the rest of the frame arrives, not
    /// after.
    fn check_text(&mut self, line: &[u8], open: usize, end: usize) {
        let Some(from) = self.checked else { return };
        debug_assert!(from > open);
        let bytes = &line[from..end];
        if has_control(bytes) {
            self.checked = None;
            self.text.clear();
            return;
        }
        let valid = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            // Cut in the middle of a sequence: the rest comes later.
            Err(e) if e.error_len().is_none() => {
                // SAFETY: `from_utf8` found these bytes valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(&bytes[..e.valid_up_to()]) }
            }
            Err(_) => {
                self.checked = None;
                self.text.clear();
                return;
            }
        };
        if self.text.is_empty() {
            // The whole string is at least this long: one allocation.
            self.text.reserve(line.len() - from);
        }
        self.text.push_str(valid);
        self.checked = Some(from + valid.len());
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{self, Incoming};

    /// Decodes `bytes` through the large-string path, `None` when it is
    /// not taken or falls back.
    fn decode(bytes: &[u8], min: usize) -> Option<Vec<Incoming>> {
        jsonrpc::decode_taken(take(bytes, min)?)
    }

    const MIN: usize = 16;

    /// Decodes `line` both ways and asserts the same outcome; returns
    /// whether the fast way was taken.
    fn same_as_plain(line: &str) -> bool {
        let plain = jsonrpc::decode_plain_for_tests(line.as_bytes());
        let fast = decode(line.as_bytes(), MIN);
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
        let msgs = decode(line.as_bytes(), MIN).unwrap();
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
        assert!(decode(&bytes, MIN).is_none());
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
        let kept = crate::jsonrpc_cap::with_cap(1, usize::MAX, || decode(line.as_bytes(), MIN));
        assert!(kept.is_none());
    }

    /// Feeds `line` to a scanner in pieces of `step` bytes, then finishes.
    fn taken_in_pieces(line: &[u8], step: usize) -> Option<Taken> {
        take_in_pieces(line, MIN, step)
    }

    #[test]
    fn fed_in_pieces_it_takes_what_it_takes_at_once() {
        let big = "q".repeat(40);
        let wide = "é€😀".repeat(10);
        let ctrl = format!("{big}\u{1}");
        let lines = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}","b":"{wide}","c":"x\"{big}","d":"{big}"}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"{big}" :"{big}\\","e":"{wide}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{ctrl}","b":"{big}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":"{big}"#),
        ];
        let mut invalid = lines[0].clone().into_bytes();
        let at = invalid.iter().position(|&b| b == 0xc3).unwrap();
        invalid[at + 1] = b'x';
        for line in lines.iter().map(|l| l.as_bytes()).chain([&invalid[..]]) {
            let whole = Scanner::new(MIN).finish(line);
            for step in 1..=line.len() {
                let pieces = taken_in_pieces(line, step);
                assert_eq!(
                    whole.as_ref().map(|t| (&t.skeleton, &t.strings)),
                    pieces.as_ref().map(|t| (&t.skeleton, &t.strings)),
                    "step {step}: {}",
                    String::from_utf8_lossy(line)
                );
            }
        }
        // What was taken decodes as the frame does.
        let line = lines[0].as_bytes();
        let msgs = jsonrpc::decode_taken(taken_in_pieces(line, 7).unwrap());
        assert_eq!(
            msgs.unwrap(),
            jsonrpc::decode_plain_for_tests(line).unwrap()
        );
    }

    /// Frames built at random from the pieces that matter (quotes,
    /// backslashes, escapes, multibyte characters, control characters,
    /// invalid bytes, long runs), scanned whole and in random pieces: the
    /// large-string path never decodes a frame differently from the plain
    /// decoder, and never takes one the plain decoder refuses.
    #[test]
    fn random_frames_decode_as_the_plain_decoder_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        // Pieces a string may hold, and (one in eight) pieces that escape
        // in it, end it, or make it invalid.
        let clean: [&[u8]; 5] = [
            b"a",
            b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "é€😀".as_bytes(),
            b" ",
            b":",
        ];
        let risky: [&[u8]; 9] = [
            b"\\\"",
            b"\\\\",
            b"\\u00e9",
            b"\\n",
            b"\"",
            b",\"k\":",
            b"\x01",
            b"\xff",
            b"\xe2\x82",
        ];
        let mut taken_count = 0;
        for round in 0..3000 {
            let mut text = Vec::new();
            for _ in 0..next(12) {
                let piece = if next(8) == 0 {
                    risky[next(risky.len())]
                } else {
                    clean[next(clean.len())]
                };
                text.extend_from_slice(piece);
            }
            let mut line = br#"{"jsonrpc":"2.0","id":1,"result":{"a":""#.to_vec();
            line.extend_from_slice(&text);
            line.extend_from_slice(br#"","b":[1,""#);
            line.extend_from_slice(&text);
            line.extend_from_slice(br#""]}}"#);
            let plain = jsonrpc::decode_plain_for_tests(&line);
            let step = 1 + next(40);
            let fast = taken_in_pieces(&line, step).and_then(jsonrpc::decode_taken);
            match (&plain, &fast) {
                (Ok(p), Some(f)) => {
                    taken_count += 1;
                    assert_eq!(p, f, "round {round}: {}", String::from_utf8_lossy(&line));
                }
                (Err(_), Some(f)) => panic!(
                    "round {round}: took a frame the decoder refuses: {} -> {f:?}",
                    String::from_utf8_lossy(&line)
                ),
                (_, None) => {}
            }
        }
        // The fast path was taken often enough for this to mean something.
        assert!(taken_count > 300, "taken {taken_count} times");
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
