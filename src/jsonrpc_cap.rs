//! A response's `result.tools` array read with a cap, while the frame is
//! decoded: a `tools/list` page of 100 000 definitions would otherwise
//! become 100 000 parsed JSON values (about fifteen times its bytes) before
//! the client could drop any. Elements past the cap (a count, and a size:
//! the JSON text the kept elements amount to) are skipped unparsed, and
//! the result object then gets the member [`TOOLS_CUT`] so that the list
//! knows it was cut.
//!
//! The cap is per connection (`ClientOptions::max_tools`,
//! `max_tool_list_bytes`), but the envelope is read by a serde derive that
//! takes no arguments, so it travels in a thread-local set for the
//! duration of one [`with_cap`] call on the reading thread.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The start of the names of the members the reader adds to a result
/// ([`TOOLS_CUT`], [`TOOLS_RAW`], `text_content::TEXT_ONLY`). A member of
/// the server's own whose name starts so is kept under its name with a NUL
/// appended, and [`restore`] takes the NUL off: a server cannot make a
/// member the reader's, and loses none of its own.
pub(crate) const OWN_PREFIX: &str = "io.github.skald-mcp/";

/// The member a cut `tools/list` result gets (`true`).
pub(crate) const TOOLS_CUT: &str = "io.github.skald-mcp/toolsCut";

/// The member a result gets (`true`) when its `tools` array is kept as the
/// JSON text of its elements, joined by NULs into one `Value::String`,
/// instead of parsed: a parsed definition costs about thirty times its
/// text, a string per element another 72-byte `Value` and an allocation,
/// and `tools/list` makes [`McpTool`](crate::McpTool)s that share the one
/// text. (NUL cannot occur in JSON text outside a string, where it is
/// escaped, so it separates.) [`restore_tools`] turns it back for every
/// other reader.
pub(crate) const TOOLS_RAW: &str = "io.github.skald-mcp/toolsRaw";

/// The separator of the definitions in a [`TOOLS_RAW`] text.
pub(crate) const TOOLS_SEPARATOR: char = '\0';

/// The one member of the object a result that is itself an array is kept
/// in (the array), so that an array the reader hands over is always the
/// compact form of a text answer (`text_content::bare`). [`restore`] takes
/// it out again.
pub(crate) const RESULT_ARRAY: &str = "io.github.skald-mcp/array";

/// Undoes every way the reader keeps a result other than as the server
/// sent it (a `tools` array as text, [`TOOLS_RAW`]; a single text block as
/// its text, [`crate::text_content`]; an array result in an object,
/// [`RESULT_ARRAY`]; the server's own members named as the reader's,
/// [`OWN_PREFIX`]), for a caller of `request`.
pub(crate) fn restore(v: &mut Value) {
    if let Some(array) = take_array(v) {
        *v = array;
        return;
    }
    restore_tools(v);
    crate::text_content::restore(v);
    unescape_own(v);
}

/// Keeps a result that is an array under [`RESULT_ARRAY`], as the reader
/// does: for results read some other way (the elements of a batch), so that
/// an array handed over is always the compact form of a text answer.
pub(crate) fn keep_array(v: &mut Value) {
    if let Value::Array(items) = v {
        let mut obj = Map::with_capacity(1);
        obj.insert(RESULT_ARRAY.to_owned(), Value::Array(std::mem::take(items)));
        *v = Value::Object(obj);
    }
}

/// The array a result was, when the reader kept it under [`RESULT_ARRAY`].
fn take_array(v: &mut Value) -> Option<Value> {
    match v {
        Value::Object(obj) if obj.len() == 1 => obj.shift_remove(RESULT_ARRAY),
        _ => None,
    }
}

/// Takes the NUL off the names of the server's members that start with
/// [`OWN_PREFIX`] (see there), keeping their order.
fn unescape_own(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else { return };
    if !obj.keys().any(|k| k.starts_with(OWN_PREFIX)) {
        return;
    }
    let members = std::mem::take(obj);
    for (mut k, v) in members {
        if k.starts_with(OWN_PREFIX) && k.ends_with('\0') {
            k.pop();
        }
        obj.insert(k, v);
    }
}

/// Parses back a `tools` array kept as text ([`TOOLS_RAW`]), so that a
/// caller of `request` sees the result the server sent.
pub(crate) fn restore_tools(v: &mut Value) {
    let Some(obj) = v.as_object_mut() else { return };
    // Looked for first without hashing: nearly every result has no marker.
    if crate::json::map_member(obj, TOOLS_RAW).is_none() || obj.shift_remove(TOOLS_RAW).is_none() {
        return;
    }
    if let Some(Value::String(text)) = obj.get("tools") {
        let items = text
            .split(TOOLS_SEPARATOR)
            .filter(|t| !t.is_empty())
            .map(|t| serde_json::from_str(t).unwrap_or(Value::Null))
            .collect();
        obj.insert("tools".to_owned(), Value::Array(items));
    }
}

#[derive(Clone, Copy)]
struct Cap {
    items: usize,
    bytes: usize,
}

const NO_CAP: Cap = Cap {
    items: usize::MAX,
    bytes: usize::MAX,
};

thread_local! {
    static TOOLS_CAP: Cell<Cap> = const { Cell::new(NO_CAP) };
    static CUT: Cell<bool> = const { Cell::new(false) };
    /// Set when a `tools` array was read into joined texts.
    static JOINED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` (a decode) with `result.tools` capped at `items` elements and
/// about `bytes` bytes of JSON text.
pub(crate) fn with_cap<T>(items: usize, bytes: usize, f: impl FnOnce() -> T) -> T {
    struct Restore(Cap);
    impl Drop for Restore {
        fn drop(&mut self) {
            TOOLS_CAP.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(TOOLS_CAP.with(|c| c.replace(Cap { items, bytes })));
    f()
}

/// `deserialize_with` of the envelope's `result`: present (even `null`) is
/// `Some`, and a `tools` member that is an array keeps at most the cap.
pub(crate) fn result<'de, D: de::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    // Also without a cap: the definitions are kept as text either way.
    let cap = TOOLS_CAP.with(Cell::get);
    d.deserialize_any(Build { cap, top: true }).map(Some)
}

/// Builds a [`Value`]; `top`: this is the result object (whose `tools` is
/// capped), else it is the `tools` member (an array capped at `cap`).
struct Build {
    cap: Cap,
    top: bool,
}

impl<'de> DeserializeSeed<'de> for Build {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    crate::json::visit_scalars!(std::convert::identity);
    crate::json::visit_strings!(std::convert::identity);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.top {
            // The result itself is an array: not a tool list, and kept in
            // an object (see RESULT_ARRAY).
            let mut out = Vec::new();
            while let Some(v) = seq.next_element::<Value>()? {
                out.push(v);
            }
            let mut kept = Value::Array(out);
            keep_array(&mut kept);
            return Ok(kept);
        }
        let cap = self.cap;
        JOINED.with(|j| j.set(true));
        // The definitions' texts, joined (see TOOLS_RAW).
        let mut out = String::new();
        let mut n = 0usize;
        let mut bytes = 0usize;
        while n < cap.items {
            match seq.next_element::<Box<serde_json::value::RawValue>>()? {
                Some(raw) => {
                    bytes = bytes.saturating_add(raw.get().len());
                    if bytes > cap.bytes {
                        break;
                    }
                    if n > 0 {
                        out.push(TOOLS_SEPARATOR);
                    }
                    out.push_str(raw.get());
                    n += 1;
                }
                None => {
                    out.shrink_to_fit();
                    return Ok(Value::String(out));
                }
            }
        }
        // Past the cap: read on (the frame must still be valid JSON), keep
        // nothing.
        let mut more = false;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            more = true;
        }
        if more || bytes > cap.bytes {
            CUT.with(|c| c.set(true));
        }
        out.shrink_to_fit();
        Ok(Value::String(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        use crate::text_content::{Bare, Content, ContentSeed, Word, TEXT_ONLY};
        let mut out = Map::new();
        // Whether `out` holds `text_content::TEXT_ONLY` for its `content`.
        let mut compacted = false;
        // The next member's name when it was read ahead (`Some(None)`: the
        // end was).
        let mut ahead = None;
        if self.top {
            // The usual answer to `tools/call`: `content` of one text block,
            // with at most `"isError":false` and `"resultType":"complete"`
            // beside it, each once, in any order, becomes no map at all
            // (`text_content::bare`). At the first member that does not
            // fit, the members read so far go into `out` as the loop below
            // would have put them, and the loop goes on from there.
            let mut order = [Bare::Content; 3];
            let mut n = 0;
            let mut text = None;
            // What the members read so far were, into `out` (the text as
            // the compact member).
            let held = |out: &mut Map<String, Value>, order: &[Bare], text: &mut Option<String>| {
                crate::text_content::put_members(out, order, text, |t| {
                    (TEXT_ONLY.to_owned(), Value::String(t))
                })
            };
            loop {
                let Some(key) = map.next_key_seed(Word)? else {
                    if let Some(t) = text {
                        return Ok(crate::text_content::bare(t, &order[..n]));
                    }
                    held(&mut out, &order[..n], &mut text);
                    ahead = Some(None);
                    break;
                };
                // Not one of the three, or one of them again.
                let Some(member) = Bare::of(&key).filter(|m| !order[..n].contains(m)) else {
                    held(&mut out, &order[..n], &mut text);
                    ahead = Some(Some(key));
                    break;
                };
                // The member's value, when it is not the one that fits.
                let other = match member {
                    Bare::Content => match map.next_value_seed(ContentSeed)? {
                        Content::Text(t) => {
                            text = Some(t);
                            None
                        }
                        other => Some(other.into_content_value()),
                    },
                    Bare::IsErrorFalse => match map.next_value::<Value>()? {
                        Value::Bool(false) => None,
                        v => Some(v),
                    },
                    Bare::Complete => match map.next_value::<Value>()? {
                        Value::String(t) if t == "complete" => None,
                        v => Some(v),
                    },
                };
                match other {
                    None => {
                        order[n] = member;
                        n += 1;
                    }
                    Some(v) => {
                        held(&mut out, &order[..n], &mut text);
                        out.insert(key.into_owned(), v);
                        break;
                    }
                }
            }
            compacted = crate::json::map_member(&out, TEXT_ONLY).is_some();
        }
        // Names borrowed from the frame: `content` is not kept as a name
        // when it is kept compact.
        loop {
            let key = match ahead.take() {
                Some(k) => k,
                None => map.next_key_seed(Word)?,
            };
            let Some(key) = key else { break };
            let v = if self.top && key == "tools" {
                CUT.with(|c| c.set(false));
                JOINED.with(|j| j.set(false));
                let v = map.next_value_seed(Build {
                    cap: self.cap,
                    top: false,
                })?;
                if CUT.with(|c| c.replace(false)) {
                    out.insert(TOOLS_CUT.to_owned(), Value::Bool(true));
                }
                // A string here is the joined texts only when the array
                // was read (a server's own `"tools": "x"` stays a string).
                if JOINED.with(|j| j.replace(false)) {
                    out.insert(TOOLS_RAW.to_owned(), Value::Bool(true));
                }
                v
            } else if self.top && key == "content" {
                let content = map.next_value_seed(ContentSeed)?;
                // A repeated `content` keeps its first place and its last
                // value, as `Value` reads it: one kept compact before is
                // put back as it was.
                if std::mem::take(&mut compacted) {
                    crate::text_content::restore_in(&mut out);
                }
                match content {
                    Content::Text(text) if crate::json::map_member(&out, "content").is_none() => {
                        out.insert(TEXT_ONLY.to_owned(), Value::String(text));
                        compacted = true;
                        continue;
                    }
                    other => other.into_content_value(),
                }
            } else {
                map.next_value::<Value>()?
            };
            let mut key = key.into_owned();
            if self.top && key.starts_with(OWN_PREFIX) {
                key.push('\0');
            }
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Env {
        #[serde(default, deserialize_with = "result")]
        result: Option<Value>,
    }

    /// The result as a `request` caller sees it (the tool texts parsed back).
    fn decode(text: &str, cap: usize) -> Value {
        let mut v = with_cap(cap, usize::MAX, || {
            serde_json::from_str::<Env>(text).unwrap().result.unwrap()
        });
        restore(&mut v);
        v
    }

    #[test]
    fn tool_definitions_are_kept_as_their_text() {
        let text =
            r#"{"result":{"tools":[{"name": "a", "inputSchema": {"type":"object"}}, "odd"]}}"#;
        let v = serde_json::from_str::<Env>(text).unwrap().result.unwrap();
        assert_eq!(v[TOOLS_RAW], true);
        // One string: the elements' texts as the server wrote them,
        // separated by NULs.
        assert_eq!(
            v["tools"],
            json!("{\"name\": \"a\", \"inputSchema\": {\"type\":\"object\"}}\u{0}\"odd\"")
        );
        let mut restored = v.clone();
        restore_tools(&mut restored);
        assert_eq!(
            restored,
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}, "odd"]})
        );
    }

    #[test]
    fn only_the_result_tools_array_is_capped() {
        let text = r#"{"result":{"tools":[{"name":"a"},{"name":"b"},{"name":"c"}],"nextCursor":"n","other":[1,2,3]}}"#;
        assert_eq!(
            decode(text, 2),
            json!({"io.github.skald-mcp/toolsCut":true,"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"n","other":[1,2,3]})
        );
        assert!(decode(text, 3).get(TOOLS_CUT).is_none(), "nothing was cut");
        // The size cap: about 14 bytes each, 30 allowed.
        let mut by_size = with_cap(usize::MAX, 30, || {
            serde_json::from_str::<Env>(text).unwrap().result.unwrap()
        });
        restore_tools(&mut by_size);
        assert_eq!(by_size["tools"].as_array().unwrap().len(), 2);
        assert_eq!(by_size[TOOLS_CUT], true);
        assert_eq!(
            decode(text, usize::MAX)["tools"].as_array().unwrap().len(),
            3
        );
        // Nested `tools` (a tool's structuredContent) is left alone.
        let nested = r#"{"result":{"structuredContent":{"tools":[1,2,3]},"tools":"x"}}"#;
        assert_eq!(
            decode(nested, 1),
            json!({"structuredContent":{"tools":[1,2,3]},"tools":"x"})
        );
        assert_eq!(decode(r#"{"result":[1,2]}"#, 1), json!([1, 2]));
        assert_eq!(decode(r#"{"result":null}"#, 1), Value::Null);
    }

    #[test]
    fn the_cap_is_restored_and_bad_json_past_it_is_still_an_error() {
        let _ = decode(r#"{"result":{"tools":[1,2]}}"#, 1);
        assert_eq!(TOOLS_CAP.with(Cell::get).items, usize::MAX);
        let bad = r#"{"result":{"tools":[1,2,}]}}"#;
        assert!(with_cap(1, usize::MAX, || serde_json::from_str::<Env>(bad)).is_err());
    }
}
