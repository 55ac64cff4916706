//! A result's `content` that is one text block, read as that text alone.
//!
//! Nearly every `tools/call` answer is `{"content":[{"type":"text",
//! "text":"…"}], …}`. Read into a [`Value`] that block is an array, a map
//! with its hash table, two key strings and a value string: eleven
//! allocations of the fifteen a 128-byte answer cost, and the largest share
//! of the client's instructions per call (callgrind: 6.0k of 17.9k for the
//! result, 2.4k more to drop it). So the reader of a response's `result`
//! ([`crate::jsonrpc_cap`]) reads its `content` with [`ContentSeed`]: when
//! it is exactly one block whose members are `"type":"text"` then a string
//! `"text"`, in that order and nothing else, the result gets the member
//! [`TEXT_ONLY`] (the text, a string) in the place of `content`. Anything
//! else is read as it always was. [`restore`] puts the block back where
//! the member stands, so a caller of `request` sees the result the server
//! sent, member order included; `tools/call` takes the text without it
//! (`result::extract_call_result_owned`).
//!
//! When that block is the whole result, with at most `"isError":false` and
//! `"resultType":"complete"` beside it, there is no map at all: the result
//! is read as [`bare`], the text in an array (callgrind: 15.4k → 13.7k
//! instructions per 128-byte call over stdio). A result that is itself an array is kept
//! in an object by the reader (`jsonrpc_cap::RESULT_ARRAY`), so an array
//! it hands over is always this form.
//!
//! The member name is the client's own (`jsonrpc_cap::OWN_PREFIX`): a
//! server's member of that name is kept under another name until the
//! result is restored, so it cannot pass for the reader's.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The member standing for `content` when that is one text block: the
/// block's text, a string.
pub(crate) const TEXT_ONLY: &str = "io.github.skald-mcp/textContent";

/// What a result's `content` was read as.
pub(crate) enum Content {
    /// One `{"type":"text","text":…}` block: its text.
    Text(String),
    /// Anything else, as a value.
    Other(Value),
}

/// Reads a `content` member (see the module docs).
pub(crate) struct ContentSeed;

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Content;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

/// A member of a result read as [`bare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bare {
    /// `content`, one text block: the text.
    Content,
    /// `"isError": false`.
    IsErrorFalse,
    /// `"resultType": "complete"` (required in every 2026-07-28 result).
    Complete,
}

impl Bare {
    /// The member called `name`, if it is one of a bare result's.
    pub(crate) fn of(name: &str) -> Option<Bare> {
        match name {
            "content" => Some(Bare::Content),
            "isError" => Some(Bare::IsErrorFalse),
            "resultType" => Some(Bare::Complete),
            _ => None,
        }
    }

    /// Its digit in a bare result's order code.
    fn digit(self) -> u64 {
        match self {
            Bare::Content => 1,
            Bare::IsErrorFalse => 2,
            Bare::Complete => 3,
        }
    }
}

/// The whole result when it is `{"content":[one text block]}` with at most
/// `"isError":false` and `"resultType":"complete"` beside it, each once, in
/// any order (nearly every answer to `tools/call`): the text in an array,
/// without the map, its table and the member names that the object would
/// cost. `order` is the members in the order the server wrote them; beyond
/// `content` alone it is kept as a number after the text, one digit per
/// member (`[text, 123]`). The reader keeps a result that is itself an
/// array under `jsonrpc_cap::RESULT_ARRAY`, so an array it hands over is
/// always this.
pub(crate) fn bare(text: String, order: &[Bare]) -> Value {
    if order == [Bare::Content] {
        return Value::Array(vec![Value::String(text)]);
    }
    let code = order.iter().fold(0, |code, m| code * 10 + m.digit());
    Value::Array(vec![Value::String(text), Value::from(code)])
}

/// The members of a bare result in order, from its code; `None` for a code
/// [`bare`] does not make.
fn order_of(code: u64) -> Option<([Bare; 3], usize)> {
    let len = match code {
        10..=99 => 2,
        100..=999 => 3,
        _ => return None,
    };
    let mut order = [Bare::Content; 3];
    let mut place = 10u64.pow(len as u32 - 1);
    for i in 0..len {
        let m = match code / place % 10 {
            1 => Bare::Content,
            2 => Bare::IsErrorFalse,
            3 => Bare::Complete,
            _ => return None,
        };
        if order[..i].contains(&m) {
            return None;
        }
        order[i] = m;
        place /= 10;
    }
    order[..len]
        .contains(&Bare::Content)
        .then_some((order, len))
}

/// The members `order` stands for, into `out` in that order: `content` as
/// `content` makes it of the text, the others as they were.
pub(crate) fn put_members(
    out: &mut Map<String, Value>,
    order: &[Bare],
    text: &mut Option<String>,
    content: fn(String) -> (String, Value),
) {
    for m in order {
        let (name, value) = match m {
            Bare::Content => content(text.take().unwrap_or_default()),
            Bare::IsErrorFalse => ("isError".to_owned(), Value::Bool(false)),
            Bare::Complete => ("resultType".to_owned(), Value::from("complete")),
        };
        out.insert(name, value);
    }
}

/// The text taken out of a [`bare`] result, and its members in order
/// (`None`: `v` is not one).
fn take_parts(v: &mut Value) -> Option<(String, [Bare; 3], usize)> {
    let Value::Array(items) = v else { return None };
    let (text, order) = match items.as_mut_slice() {
        [Value::String(text)] => (text, ([Bare::Content; 3], 1)),
        [Value::String(text), Value::Number(code)] => (text, code.as_u64().and_then(order_of)?),
        _ => return None,
    };
    Some((std::mem::take(text), order.0, order.1))
}

/// Takes the text out of a [`bare`] result (`None`: `v` is not one).
pub(crate) fn take_bare(v: &mut Value) -> Option<String> {
    take_parts(v).map(|(text, ..)| text)
}

/// Puts the text block back in the place of [`TEXT_ONLY`] in a result
/// object, and makes a [`bare`] result the object it was read from
/// (nothing to do for any other value).
pub(crate) fn restore(v: &mut Value) {
    if v.is_array() {
        if let Some((text, order, n)) = take_parts(v) {
            let mut obj = Map::with_capacity(n);
            put_members(&mut obj, &order[..n], &mut Some(text), |t| {
                ("content".to_owned(), block(t))
            });
            *v = Value::Object(obj);
        }
        return;
    }
    if let Some(obj) = v.as_object_mut() {
        restore_in(obj);
    }
}

/// [`restore`] on the members of a result.
pub(crate) fn restore_in(obj: &mut Map<String, Value>) {
    // Looked for without hashing: a result has a few members.
    let Some(at) = obj.keys().position(|k| k == TEXT_ONLY) else {
        return;
    };
    if let Some(Value::String(text)) = obj.shift_remove(TEXT_ONLY) {
        obj.shift_insert(at, "content".to_owned(), block(text));
    }
}

/// `[{"type":"text","text":text}]`.
fn block(text: String) -> Value {
    Value::Array(vec![text_item(text)])
}

/// `{"type":"text","text":text}`.
fn text_item(text: String) -> Value {
    Value::Object(Map::from_iter([
        ("type".to_owned(), Value::String("text".to_owned())),
        ("text".to_owned(), Value::String(text)),
    ]))
}

/// A value of [`Content::Other`] made by `D`.
fn other<'de, D: de::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    Value::deserialize(d)
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    crate::json::visit_scalars!(Content::Other);
    crate::json::visit_strings!(Content::Other);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content, A::Error> {
        other(MapAccessDeserializer::new(map)).map(Content::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let Some(first) = seq.next_element_seed(ItemSeed)? else {
            return Ok(Content::Other(Value::Array(Vec::new())));
        };
        let second = seq.next_element::<Value>()?;
        if let (Content::Text(_), None) = (&first, &second) {
            return Ok(first);
        }
        let mut items = vec![first.into_item_value()];
        items.extend(second);
        while let Some(v) = seq.next_element::<Value>()? {
            items.push(v);
        }
        Ok(Content::Other(Value::Array(items)))
    }
}

impl Content {
    /// The value of `content` it was read from.
    pub(crate) fn into_content_value(self) -> Value {
        match self {
            Content::Text(text) => block(text),
            Content::Other(v) => v,
        }
    }

    /// The value of the element of `content` it was read from.
    fn into_item_value(self) -> Value {
        match self {
            Content::Text(text) => text_item(text),
            Content::Other(v) => v,
        }
    }
}

/// Reads one element of `content`: [`Content::Text`] when it is a text
/// block as the module docs say.
struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Content;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        d.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    crate::json::visit_scalars!(Content::Other);
    crate::json::visit_strings!(Content::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
        other(SeqAccessDeserializer::new(seq)).map(Content::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        // `"type":"text"`, then `"text"` with a string, then the end; at
        // the first member that does not fit, the members read so far
        // become the start of an object read in full.
        let Some(k1) = map.next_key_seed(Word)? else {
            return Ok(Content::Other(Value::Object(Map::new())));
        };
        if k1 != "type" {
            return rest([], Some(k1), map).map(Content::Other);
        }
        let v1 = map.next_value_seed(ScalarSeed)?;
        if !matches!(&v1, Scalar::Str(s) if s == "text") {
            return rest([(k1, v1)], None, map).map(Content::Other);
        }
        let Some(k2) = map.next_key_seed(Word)? else {
            return rest([(k1, v1)], None, map).map(Content::Other);
        };
        if k2 != "text" {
            return rest([(k1, v1)], Some(k2), map).map(Content::Other);
        }
        let v2 = map.next_value_seed(ScalarSeed)?;
        let Scalar::Str(text) = v2 else {
            return rest([(k1, v1), (k2, v2)], None, map).map(Content::Other);
        };
        match map.next_key_seed(Word)? {
            None => Ok(Content::Text(text.into_owned())),
            Some(k3) => {
                rest([(k1, v1), (k2, Scalar::Str(text))], Some(k3), map).map(Content::Other)
            }
        }
    }
}

/// The general case of a block: the members `seen`, then the member named
/// `next` (its value still to be read), then the rest of `map`, into an
/// object (a repeated member keeps its first place and its last value, as
/// `Value` reads it).
fn rest<'de, A: MapAccess<'de>, const N: usize>(
    seen: [(Cow<'de, str>, Scalar<'de>); N],
    next: Option<Cow<'de, str>>,
    mut map: A,
) -> Result<Value, A::Error> {
    let mut out = Map::new();
    for (k, v) in seen {
        out.insert(k.into_owned(), v.into_value());
    }
    if let Some(k) = next {
        let v: Value = map.next_value()?;
        out.insert(k.into_owned(), v);
    }
    while let Some(k) = map.next_key::<String>()? {
        let v: Value = map.next_value()?;
        out.insert(k, v);
    }
    Ok(Value::Object(out))
}

/// A member name, borrowed from the frame when it has no escapes.
pub(crate) struct Word;

impl<'de> DeserializeSeed<'de> for Word {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Word {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A member's value: a string (borrowed when it can be) or any other value.
enum Scalar<'de> {
    Str(Cow<'de, str>),
    Other(Value),
}

impl Scalar<'_> {
    fn into_value(self) -> Value {
        match self {
            Scalar::Str(s) => Value::String(s.into_owned()),
            Scalar::Other(v) => v,
        }
    }
}

struct ScalarSeed;

impl<'de> DeserializeSeed<'de> for ScalarSeed {
    type Value = Scalar<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ScalarSeed {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    crate::json::visit_scalars!(Scalar::Other);
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        other(SeqAccessDeserializer::new(seq)).map(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        other(MapAccessDeserializer::new(map)).map(Scalar::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Incoming;

    /// The result of a response frame as the reader hands it to `Peer`.
    fn result_as_read(frame: &str) -> Value {
        match crate::jsonrpc::decode_plain_for_tests(frame.as_bytes()) {
            Ok(mut msgs) => match msgs.pop() {
                Some(Incoming::Response { outcome: Ok(r), .. }) => r,
                other => panic!("not a result: {other:?}"),
            },
            Err(e) => panic!("{frame}: {e:?}"),
        }
    }

    fn frame(result: &str) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#)
    }

    /// Every shape of `content`: read, then restored, it is the result the
    /// server sent, member order included (compared as text: maps compare
    /// equal in any order); only the one-text-block shape is kept compact.
    #[test]
    fn restored_results_are_what_the_server_sent() {
        let compact = [
            r#"{"content":[{"type":"text","text":"s"}],"structuredContent":{"content":[{"type":"text","text":"nested"}]}}"#,
            r#"{"tools":[],"content":[{"type":"text","text":"x"}],"more":[1]}"#,
            // The server's own members named as the reader's are kept.
            r#"{"content":[{"type":"text","text":"mine"}],"io.github.skald-mcp/textContent":"x"}"#,
            r#"{"io.github.skald-mcp/textContent":"x","content":[{"type":"text","text":"mine"}]}"#,
            r#"{"io.github.skald-mcp/toolsRaw":true,"tools":"a","content":[{"type":"text","text":"t"}],"io.github.skald-mcp/other\u0000":1}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":null}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false,"x":1}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false,"isError":true}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"x":1,"isError":false}"#,
            r#"{"resultType":"complete","isError":true,"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"resultType":"input_required"}"#,
            r#"{"isError":false,"resultType":"complete","content":[{"type":"text","text":"hi"}],"x":null}"#,
        ];
        // Kept as no map at all (`bare`): the text alone, or with
        // `"isError":false` after it.
        let bare = [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#,
            r#"{"content":[{"type":"text","text":""}]}"#,
            r#"{"content":[{"type":"text","text":"a \"quoted\" \\ line\nand \u00e9"}]}"#,
            r#"{"content":[{"t\u0079pe":"te\u0078t","text":"escaped names"}]}"#,
            r#"{ "content" : [ { "type" : "text" , "text" : "spaced" } ] }"#,
            r#"{ "content" : [ { "type" : "text" , "text" : "spaced" } ] , "isError" : false }"#,
            // 2026-07-28 results carry `resultType`: any order of the three.
            r#"{"isError":false,"content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":"hi"}]}"#,
            r#"{"resultType":"complete","isError":false,"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false,"resultType":"complete"}"#,
        ];
        let general = [
            r#"{"content":[{"text":"hi","type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":1}}]}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
            r#"{"content":[{"type":"text","text":"a"},1,null,[2]]}"#,
            r#"{"content":[]}"#,
            r#"{"content":[{}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":5}]}"#,
            r#"{"content":[{"type":"text","text":{"a":1}}]}"#,
            r#"{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":1,"text":"x"}]}"#,
            r#"{"content":[{"type":"text","type":"text","text":"dup"}]}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":["text"]}"#,
            r#"{"content":[[{"type":"text","text":"x"}]]}"#,
            r#"{"content":"text"}"#,
            r#"{"content":{"type":"text","text":"x"}}"#,
            r#"{"content":null}"#,
            r#"{"content":true}"#,
            r#"{"content":1.5}"#,
            r#"{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}]}"#,
            r#"{"content":[{"type":"text","text":"first"}],"x":1,"content":"last"}"#,
            r#"{"content":"first","content":[{"type":"text","text":"last"}]}"#,
            r#"[{"content":[{"type":"text","text":"not the result object"}]}]"#,
            r#"{"io.github.skald-mcp/textContent":"x"}"#,
            r#"{"io.github.skald-mcp/toolsRaw":true,"tools":"{}"}"#,
            r#"{"io.github.skald-mcp/toolsCut":true,"tools":[]}"#,
            // A repeated `content` keeps its first place and its last value.
            r#"{"content":[{"type":"text","text":"hi"}],"content":[{"type":"text","text":"again"}]}"#,
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false,"content":[{"type":"text","text":"again"}]}"#,
            // Results that are arrays, some shaped as the bare form.
            r#"["hi"]"#,
            r#"["hi",false]"#,
            r#"["hi",12]"#,
            r#"["hi",321]"#,
            // No content, or one that is not a text block.
            r#"{"isError":false,"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"resultType":"complete","isError":false,"content":"x"}"#,
            r#"[1,2]"#,
            r#"[]"#,
            r#"{"io.github.skald-mcp/array":["hi"]}"#,
        ];
        for (result, form) in bare
            .iter()
            .map(|r| (r, Some(true)))
            .chain(compact.iter().map(|r| (r, Some(false))))
            .chain(general.iter().map(|r| (r, None)))
        {
            let mut read = result_as_read(&frame(result));
            // Compact: no map (`bare`), or the member in the place of
            // `content`.
            let kept = if read.is_array() {
                Some(true)
            } else {
                read.as_object()
                    .is_some_and(|o| o.contains_key(TEXT_ONLY) && !o.contains_key("content"))
                    .then_some(false)
            };
            assert_eq!(kept, form, "{result}");
            crate::jsonrpc_cap::restore(&mut read);
            let sent: Value = serde_json::from_str(result).unwrap();
            assert_eq!(read.to_string(), sent.to_string(), "{result}");
        }
    }

    /// Every order of the members a bare result may have comes back from
    /// its code, and no other code is taken for one.
    #[test]
    fn every_bare_order_round_trips() {
        use Bare::*;
        let orders: [&[Bare]; 11] = [
            &[Content],
            &[Content, IsErrorFalse],
            &[IsErrorFalse, Content],
            &[Content, Complete],
            &[Complete, Content],
            &[Content, IsErrorFalse, Complete],
            &[Content, Complete, IsErrorFalse],
            &[IsErrorFalse, Content, Complete],
            &[IsErrorFalse, Complete, Content],
            &[Complete, Content, IsErrorFalse],
            &[Complete, IsErrorFalse, Content],
        ];
        for order in orders {
            let mut v = bare("t".into(), order);
            let mut restored = v.clone();
            restore(&mut restored);
            let names: Vec<&str> = restored
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            let expected: Vec<&str> = order
                .iter()
                .map(|m| match m {
                    Content => "content",
                    IsErrorFalse => "isError",
                    Complete => "resultType",
                })
                .collect();
            assert_eq!(names, expected, "{order:?}");
            assert_eq!(take_bare(&mut v).as_deref(), Some("t"), "{order:?}");
        }
        for code in [0, 1, 2, 3, 11, 22, 23, 32, 112, 121, 4, 14, 1234, 1000, 103] {
            let mut v = serde_json::json!(["t", code]);
            assert_eq!(take_bare(&mut v), None, "{code}");
        }
    }

    /// The public decoder (the fuzz targets' entry point) hands out what
    /// came, never the compact form.
    #[test]
    fn the_public_decoder_restores() {
        let f = frame(r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#);
        let msgs = crate::jsonrpc::decode(f.as_bytes()).unwrap();
        let Some(Incoming::Response { outcome: Ok(r), .. }) = msgs.first() else {
            panic!("{msgs:?}")
        };
        assert_eq!(
            r.to_string(),
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#
        );
    }

    /// A text large enough for the large-string path is put back into the
    /// compact member, and equals the plain read.
    #[test]
    fn large_texts_are_put_back_into_the_compact_form() {
        let big = "x".repeat(crate::limits::LARGE_STRING_MIN * 2);
        let f = frame(&format!(
            r#"{{"content":[{{"type":"text","text":"{big}"}}]}}"#
        ));
        let mut got = None;
        crate::jsonrpc::decode_each(f.as_bytes(), |m| got = Some(m)).unwrap();
        let Some(Incoming::Response {
            outcome: Ok(mut r), ..
        }) = got
        else {
            panic!("not a result")
        };
        assert_eq!(take_bare(&mut r).as_deref(), Some(big.as_str()));
    }

    /// Bad JSON inside `content` is an error, as it is without the compact
    /// reading.
    #[test]
    fn bad_json_in_content_is_still_an_error() {
        for bad in [
            r#"{"content":[{"type":"text","text":"x"]}"#,
            r#"{"content":[{"type":"text","text":"x"},]}"#,
            r#"{"content":[{"type":"text","text":}]}"#,
            r#"{"content":[{"type":"text","text":"x",}]}"#,
            r#"{"content":[{"type":"text" "text":"x"}]}"#,
        ] {
            assert!(
                crate::jsonrpc::decode_plain_for_tests(frame(bad).as_bytes()).is_err(),
                "{bad}"
            );
        }
    }
}

#[cfg(test)]
mod generated {
    use super::*;
    use crate::jsonrpc::Incoming;

    /// A small deterministic generator (xorshift64*): the same cases on
    /// every run, no dependency.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        /// A name or string, often one the reader looks for.
        fn word(&mut self) -> String {
            const WORDS: [&str; 11] = [
                "content",
                "type",
                "text",
                "isError",
                "resultType",
                "complete",
                "structuredContent",
                TEXT_ONLY,
                "t\\u0065xt",
                "",
                "x\\\"y",
            ];
            WORDS[self.below(WORDS.len() as u64) as usize].to_owned()
        }
        /// JSON text of a value, shaped like a result's parts.
        fn value(&mut self, depth: u32) -> String {
            let pick = if depth == 0 {
                self.below(4)
            } else {
                self.below(8)
            };
            match pick {
                0 => format!("\"{}\"", self.word()),
                1 => {
                    ["null", "true", "false", "0", "-1.5", "12"][self.below(6) as usize].to_owned()
                }
                2 => "\"text\"".to_owned(),
                3 => format!("\"{}\"", "é".repeat(self.below(3) as usize)),
                4 | 5 => {
                    // A block, usually a text one.
                    let mut members = vec![
                        format!(
                            "\"type\":{}",
                            if self.below(4) == 0 {
                                self.value(0)
                            } else {
                                "\"text\"".into()
                            }
                        ),
                        format!("\"text\":{}", self.value(depth - 1)),
                    ];
                    if self.below(3) == 0 {
                        members.push(format!("\"{}\":{}", self.word(), self.value(depth - 1)));
                    }
                    if self.below(4) == 0 {
                        members.swap(0, 1);
                    }
                    format!("{{{}}}", members.join(","))
                }
                6 => {
                    let n = self.below(3);
                    let items: Vec<String> = (0..n).map(|_| self.value(depth - 1)).collect();
                    format!("[{}]", items.join(","))
                }
                _ => {
                    let n = self.below(4);
                    let members: Vec<String> = (0..n)
                        .map(|_| format!("\"{}\":{}", self.word(), self.value(depth - 1)))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }
            }
        }
        /// A result object: members named as a result's are, often a
        /// `content` of one block, sometimes repeated.
        fn result(&mut self) -> String {
            let n = 1 + self.below(4);
            let members: Vec<String> = (0..n)
                .map(|_| {
                    let name = if self.below(2) == 0 {
                        "content".to_owned()
                    } else {
                        self.word()
                    };
                    let value = match self.below(3) {
                        0 => format!(r#"[{{"type":"text","text":"{}"}}]"#, self.word()),
                        1 => format!("[{}]", self.value(2)),
                        _ => self.value(2),
                    };
                    format!("\"{name}\":{value}")
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }

    /// Thousands of generated results: the reader's compact form, restored,
    /// is the value `serde_json` reads from the same text, member order
    /// included; a frame the reader refuses is one `serde_json` refuses.
    #[test]
    fn generated_results_restore_to_what_was_sent() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let (mut compacted, mut bare) = (0, 0);
        for i in 0..20_000 {
            // Now and then a result that is an array (the bare form's
            // shape among them).
            let result = match i % 97 {
                0 => format!("[{}]", g.value(2)),
                1 => format!("[\"{}\",false]", g.word()),
                _ => g.result(),
            };
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            let sent: Result<Value, _> = serde_json::from_str(&result);
            let read = crate::jsonrpc::decode_plain_for_tests(frame.as_bytes());
            let (sent, mut read) = match (sent, read) {
                (Ok(sent), Ok(mut msgs)) => match msgs.pop() {
                    Some(Incoming::Response { outcome: Ok(r), .. }) => (sent, r),
                    other => panic!("{frame}: {other:?}"),
                },
                (Err(_), Err(_)) => continue,
                (a, b) => panic!("{frame}: serde_json {a:?}, the reader {b:?}"),
            };
            bare += usize::from(read.is_array());
            let compact = read.is_array()
                || read
                    .as_object()
                    .is_some_and(|o| o.contains_key(TEXT_ONLY) && !o.contains_key("content"));
            if compact {
                compacted += 1;
            }
            crate::jsonrpc_cap::restore(&mut read);
            assert_eq!(read.to_string(), sent.to_string(), "{result}");
        }
        // The generator reaches the compact form, and not always.
        assert!((1_000..19_000).contains(&compacted), "{compacted}");
        assert!(bare >= 100, "{bare} bare");
    }
}
