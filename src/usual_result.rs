//! The usual `tools/call` result read straight from its text.
//!
//! Nearly every answer to `tools/call` is one text block with at most
//! `"isError":false` and `"resultType":"complete"` beside it, written as
//! compact JSON by the official SDKs (`{"content":[{"type":"text","text":
//! "…"}],"isError":false}`). Read through serde, with the visitors of
//! [`crate::text_content`] that make its [`bare`] form, it cost 2.9k of the
//! client's 10.5k instructions per 128-byte call (callgrind): a visitor
//! call, a key match and a string check per member. [`read`] recognises
//! that layout byte by byte and makes the same value; anything else
//! (whitespace, another member, an escape in the text, another order of
//! the block's members) is left to the serde path, which reads every
//! layout. The unit tests and the `call_result_read` fuzz target compare
//! the two.

use serde_json::Value;

use crate::json_write;
use crate::text_content::{bare, Bare};

/// `content` as one text block, up to its text.
const CONTENT_HEAD: &str = r#""content":[{"type":"text","text":""#;
/// `content` after its text.
const CONTENT_TAIL: &str = r#""}]"#;
/// `isError` when false.
const IS_ERROR_FALSE: &str = r#""isError":false"#;
/// The 2026-07-28 result type of a complete result.
const COMPLETE: &str = r#""resultType":"complete""#;

/// The [`bare`] form of the result at the start of `s` and the number of
/// bytes it takes, when it is written in the usual compact layout: `{`,
/// then `content` (one text block with `type` then `text`) and at most
/// `"isError":false` and `"resultType":"complete"`, each once, in any
/// order, separated by commas, then `}`, without whitespace, and the text
/// without escapes. `None` for anything else (the serde path reads it).
pub(crate) fn read(s: &str) -> Option<(Value, usize)> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let mut at = 1;
    let mut order = [Bare::Content; 3];
    let mut members = 0;
    let mut text = None;
    loop {
        let rest = &s[at..];
        let member = if let Some(r) = rest.strip_prefix(CONTENT_HEAD) {
            let len = plain_len(r.as_bytes())?;
            r[len..].strip_prefix(CONTENT_TAIL)?;
            text = Some(&r[..len]);
            at += CONTENT_HEAD.len() + len + CONTENT_TAIL.len();
            Bare::Content
        } else if rest.starts_with(IS_ERROR_FALSE) {
            at += IS_ERROR_FALSE.len();
            Bare::IsErrorFalse
        } else if rest.starts_with(COMPLETE) {
            at += COMPLETE.len();
            Bare::Complete
        } else {
            return None;
        };
        if members == order.len() || order[..members].contains(&member) {
            return None;
        }
        order[members] = member;
        members += 1;
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    let text = text?;
    Some((bare(text.to_owned(), &order[..members]), at + 1))
}

/// The length of the JSON string text at the start of `b` up to its
/// closing quote, when it needs no unescaping: `None` when a backslash, a
/// control character (which JSON does not allow unescaped) or the end of
/// `b` comes first.
fn plain_len(b: &[u8]) -> Option<usize> {
    json_write::first_special(b).filter(|&i| b[i] == b'"')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde path's reading of a result (the reader's visitors).
    fn by_serde(result: &str) -> Value {
        let mut d = serde_json::Deserializer::from_str(result);
        crate::jsonrpc_cap::result(&mut d)
            .expect("valid JSON")
            .expect("a result")
    }

    /// What `read` makes of `result` is what the serde path makes, and it
    /// takes the whole text.
    fn same(result: &str) {
        let (v, n) = read(result).unwrap_or_else(|| panic!("not read: {result}"));
        assert_eq!(n, result.len(), "{result}");
        assert_eq!(
            format!("{v:?}"),
            format!("{:?}", by_serde(result)),
            "{result}"
        );
    }

    #[test]
    fn every_order_of_the_usual_members() {
        let c = r#""content":[{"type":"text","text":"hi"}]"#;
        let e = r#""isError":false"#;
        let t = r#""resultType":"complete""#;
        for members in [
            vec![c],
            vec![c, e],
            vec![e, c],
            vec![c, t],
            vec![t, c],
            vec![c, e, t],
            vec![c, t, e],
            vec![e, c, t],
            vec![e, t, c],
            vec![t, c, e],
            vec![t, e, c],
        ] {
            same(&format!("{{{}}}", members.join(",")));
        }
    }

    #[test]
    fn texts_of_every_length_and_script() {
        for len in 0..40 {
            same(&format!(
                r#"{{"content":[{{"type":"text","text":"{}"}}],"isError":false}}"#,
                "x".repeat(len)
            ));
        }
        for text in [
            "é",
            "h\u{e9}llo \u{2713} \u{1f389}",
            "\u{7f}",
            "'<>&/",
            "\u{ffff}",
        ] {
            same(&format!(
                r#"{{"content":[{{"type":"text","text":"{text}"}}]}}"#
            ));
        }
    }

    #[test]
    fn what_the_text_path_cannot_take_is_left_to_serde() {
        // Escapes, at each place within a word.
        for at in 0..17 {
            let mut text = "y".repeat(16);
            text.insert_str(at, "\\n");
            let r = format!(r#"{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
            assert!(read(&r).is_none(), "{r}");
        }
        for r in [
            // Not the usual layout.
            r#"{}"#,
            r#"{ "content":[{"type":"text","text":"a"}]}"#,
            r#"{"content": [{"type":"text","text":"a"}]}"#,
            r#"{"content":[{"text":"a","type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
            r#"{"content":[{"type":"text","text":"a","annotations":{}}]}"#,
            r#"{"content":[{"type":"image","text":"a"}]}"#,
            r#"{"isError":false}"#,
            r#"{"resultType":"complete"}"#,
            r#"{"content":[{"type":"text","text":"a"}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":"a"}],"resultType":"incomplete"}"#,
            r#"{"content":[{"type":"text","text":"a"}],"structuredContent":{}}"#,
            r#"{"content":[{"type":"text","text":"a"}],"isError":false,"isError":false}"#,
            r#"{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}"#,
            r#"{"content":[{"type":"text","text":"a"}],}"#,
            r#"{"content":[{"type":"text","text":"a"}]"#,
            r#"{"content":[{"type":"text","text":"a"#,
            "{\"content\":[{\"type\":\"text\",\"text\":\"a\tb\"}]}",
            "{\"content\":[{\"type\":\"text\",\"text\":\"a\u{1}b\"}]}",
            r#"[{"content":[{"type":"text","text":"a"}]}]"#,
        ] {
            assert!(read(r).is_none(), "{r}");
        }
    }

    #[test]
    fn it_stops_at_the_closing_brace() {
        let r = r#"{"content":[{"type":"text","text":"a"}]}}  "#;
        assert_eq!(read(r).map(|(_, n)| n), Some(r.find('}').unwrap() + 3));
    }

    /// `plain_len` against a byte-at-a-time reading, for every place of a
    /// quote, a backslash or a control character in a 20-byte text (so in
    /// each byte of the two words and the tail), and next to bytes that
    /// the word test could confuse with them.
    #[test]
    fn plain_len_finds_the_first_special_byte() {
        let slow = |b: &[u8]| -> Option<usize> {
            for (i, &c) in b.iter().enumerate() {
                match c {
                    b'"' => return Some(i),
                    b'\\' | 0..=0x1f => return None,
                    _ => {}
                }
            }
            None
        };
        for fill in [
            b'a', 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff, 0x20,
        ] {
            for special in [b'"', b'\\', 0x00, 0x01, 0x1f] {
                for at in 0..20 {
                    for second in [None, Some(b'"'), Some(0x00)] {
                        let mut b = vec![fill; 20];
                        b[at] = special;
                        if let Some(s) = second {
                            if at + 1 < b.len() {
                                b[at + 1] = s;
                            }
                        }
                        assert_eq!(plain_len(&b), slow(&b), "{b:?}");
                    }
                }
            }
        }
        assert_eq!(plain_len(b""), None);
        assert_eq!(plain_len(&[b'a'; 64]), None);
    }
}
