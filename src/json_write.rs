//! JSON text written straight into a byte buffer, for the request path.
//!
//! `serde_json`'s serializer reaches every string through its escaping
//! loop and every member through the `Serialize` machinery: writing a
//! `tools/call` request's params (`{"name":…,"arguments":{…}}`) and its
//! method cost about 600 instructions, a fifteenth of a 128-byte call.
//! Most strings on that path (method names, member names, tool names, short
//! arguments) need no escaping at all; those are copied between quotes, and
//! a string that needs escaping, and every number, is still written by
//! `serde_json`. The bytes are `serde_json::to_vec`'s (the tests compare
//! them on generated values).

use serde_json::Value;

/// Writes `v` as compact JSON, byte for byte what `serde_json::to_writer`
/// writes.
pub(crate) fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut obj = Object::open(out);
            for (k, v) in members {
                obj.key(out, k);
                value(out, v);
            }
            obj.close(out);
        }
    }
}

/// Writes `s` as a JSON string: between quotes as it is when nothing in it
/// needs escaping, else through `serde_json`.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    if first_special(s.as_bytes()).is_none() {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a `Vec` cannot fail, and a string always serialises.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// The index of the first byte of `b` that a JSON string cannot hold as
/// it is: a quote, a backslash or a control character. Eight bytes at a
/// time: a word in which one of them may be goes to the byte loop.
pub(crate) fn first_special(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // Bit 7 of a byte is set where that byte of `x` is zero (or, past a
    // zero byte, may seem so: the word then goes to the byte loop anyway).
    let zeroish = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = 0;
    while let Some(word) = b[i..].first_chunk::<8>() {
        let w = u64::from_le_bytes(*word);
        let quote = zeroish(w ^ (ONES * u64::from(b'"')));
        let backslash = zeroish(w ^ (ONES * u64::from(b'\\')));
        // Below 0x20 (bytes from 0x80 up have bit 7 set, cleared by `!w`).
        let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        if quote | backslash | control != 0 {
            break;
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|j| i + j)
}

/// Writes a number as `serde_json` does (its integer and float formats).
pub(crate) fn number(out: &mut Vec<u8>, n: &serde_json::Number) {
    // Writing into a `Vec` cannot fail, and a number always serialises.
    let _ = serde_json::to_writer(&mut *out, n);
}

/// An object being written: `{`, then members separated by commas, `}`.
pub(crate) struct Object {
    first: bool,
}

impl Object {
    /// Writes the `{`.
    pub(crate) fn open(out: &mut Vec<u8>) -> Object {
        out.push(b'{');
        Object { first: true }
    }

    /// Writes the separator and `"key":`; the caller writes the value.
    pub(crate) fn key(&mut self, out: &mut Vec<u8>, key: &str) {
        if !std::mem::take(&mut self.first) {
            out.push(b',');
        }
        string(out, key);
        out.push(b':');
    }

    /// Writes the `}`.
    pub(crate) fn close(self, out: &mut Vec<u8>) {
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same(v: &Value) {
        let mut out = Vec::new();
        value(&mut out, v);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(v).unwrap()
        );
    }

    /// `first_special` against a byte-at-a-time search, for every place of
    /// each kind of special byte in a 20-byte text (each byte of two words
    /// and the tail), among bytes the word test could confuse with them.
    #[test]
    fn first_special_finds_the_first() {
        let slow = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        for fill in [
            b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff,
        ] {
            for special in [b'"', b'\\', 0x00, 0x01, 0x1f] {
                for at in 0..20 {
                    for next in [None, Some(b'"'), Some(0x00), Some(0x01)] {
                        let mut b = vec![fill; 20];
                        b[at] = special;
                        if let (Some(n), true) = (next, at + 1 < b.len()) {
                            b[at + 1] = n;
                        }
                        assert_eq!(first_special(&b), slow(&b), "{b:?}");
                    }
                }
            }
            assert_eq!(first_special(&[fill; 20]), slow(&[fill; 20]));
        }
        assert_eq!(first_special(b""), None);
    }

    #[test]
    fn the_bytes_are_serde_jsons() {
        let strings = [
            "",
            "plain",
            "quote\"",
            "back\\slash",
            "new\nline",
            "\u{0}\u{1}\u{8}\u{c}\u{1f}\t\r",
            "\u{7f}",
            "h\u{e9}llo \u{2713} \u{1f389}",
            "</script>",
            "\u{2028}\u{2029}",
        ];
        for s in strings {
            same(&json!(s));
            same(&json!({ s: s, "k": [s, { s: null }] }));
        }
        for n in [
            json!(0),
            json!(-1),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(0.1),
            json!(-1.5e300),
            json!(1e-7),
            json!(913.111_111_111_111_1),
        ] {
            same(&n);
            same(&json!([n, { "n": n }]));
        }
        same(&json!(null));
        same(&json!([true, false, null, [], {}, [[]], { "": {} }]));
        same(
            &json!({"name": "echo", "arguments": {"size": 128, "text": "a\"b", "nested": {"deep": [1, 2.5, "x"]}}}),
        );
    }

    /// Generated values (a fixed seed): nested arrays and objects of
    /// strings drawn from bytes that need escaping and bytes that do not.
    #[test]
    fn generated_values_are_written_as_serde_json_writes_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        fn text(next: &mut dyn FnMut() -> u64) -> String {
            let alphabet = [
                'a',
                'Z',
                ' ',
                '"',
                '\\',
                '\n',
                '\u{1}',
                '\u{7f}',
                '\u{e9}',
                '\u{1f389}',
                '/',
            ];
            let len = next() % 12;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect()
        }
        fn gen(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
            match next() % if depth == 0 { 4 } else { 6 } {
                0 => Value::String(text(next)),
                1 => json!(next() as i64),
                2 => json!((next() % 1000) as f64 / 7.0),
                3 => json!(next() % 2 == 0),
                4 => Value::Array((0..next() % 4).map(|_| gen(next, depth - 1)).collect()),
                _ => {
                    let mut m = serde_json::Map::new();
                    for _ in 0..next() % 4 {
                        let k = text(next);
                        m.insert(k, gen(next, depth - 1));
                    }
                    Value::Object(m)
                }
            }
        }
        for _ in 0..2000 {
            same(&gen(&mut next, 4));
        }
    }
}
