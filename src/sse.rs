//! A Server-Sent Events parser, as the Streamable HTTP transport needs it.
//!
//! It follows the "event stream interpretation" of the WHATWG HTML standard:
//!
//! * lines end with CRLF, LF or a lone CR, and a CRLF may be split across
//!   two reads;
//! * a line starting with `:` is a comment;
//! * `field:value` (one space after the colon is dropped), or a bare `field`
//!   with an empty value; unknown fields are ignored;
//! * `data` lines accumulate, joined by `\n`; a blank line dispatches the
//!   event; an event without any `data` line is not dispatched;
//! * `id` sets the stream's last event id (ignored when it contains NUL);
//!   it persists across events, as the `Last-Event-ID` a reconnection sends;
//! * `retry` (ASCII digits only) sets the reconnection delay in milliseconds;
//! * a leading UTF-8 byte order mark is skipped;
//! * at the end of the stream an incomplete event is discarded.
//!
//! The parser is push-based ([`SseParser::feed`]) so events may be split
//! across reads at any byte; [`SseReader`] drives it from any [`Read`].
//! Nothing is buffered without bound: an event (or a line) larger than the
//! configured limit is skipped up to its terminating blank line and reported
//! once as [`SseError::EventTooLarge`], after which parsing goes on.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read};
use std::time::Duration;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many bytes a line may have beyond the event limit (the field name,
/// the colon and a space).
const FIELD_OVERHEAD: usize = 16;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the last `event` field, or `message` when none was set.
    pub event: String,
    /// The `data` lines joined by `\n`, as raw bytes (UTF-8 is not checked
    /// here; the JSON decoder reports invalid UTF-8 itself).
    pub data: Vec<u8>,
    /// The stream's last event id when this event was dispatched (set by this
    /// event or an earlier one), if any.
    pub id: Option<String>,
}

impl SseEvent {
    /// The data as text, with invalid UTF-8 replaced.
    #[cfg_attr(not(feature = "fuzzing"), allow(dead_code))] // the fuzz targets' entry point
    pub fn data_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.data)
    }
}

/// What can go wrong while reading an event stream.
#[derive(Debug)]
pub enum SseError {
    /// An event was larger than the limit; it was skipped, and the next
    /// event can still be read.
    EventTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Reading the underlying stream failed.
    Io(io::Error),
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => {
                write!(f, "an event exceeds the {limit}-byte limit")
            }
            SseError::Io(e) => write!(f, "reading the event stream failed: {e}"),
        }
    }
}

impl std::error::Error for SseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SseError::Io(e) => Some(e),
            SseError::EventTooLarge { .. } => None,
        }
    }
}

enum Ready {
    Event(SseEvent),
    TooLarge,
}

/// An incremental event-stream parser. Feed it bytes as they arrive; take
/// the events out with [`next_event`](SseParser::next_event).
pub struct SseParser {
    max: usize,
    /// Bytes seen so far while checking for a leading BOM (`None` once done).
    start: Option<Vec<u8>>,
    line: Vec<u8>,
    /// Whether the current line has any byte (also while discarding).
    line_started: bool,
    /// The current line is longer than the limit: its bytes are dropped.
    line_too_long: bool,
    /// The previous byte was a CR; a LF right after it ends nothing.
    after_cr: bool,
    data: Vec<u8>,
    has_data: bool,
    event_type: String,
    last_event_id: String,
    retry: Option<Duration>,
    /// The current event is too large: skip it up to its blank line.
    discarding: bool,
    ready: VecDeque<Ready>,
}

impl fmt::Debug for SseParser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseParser")
            .field("max", &self.max)
            .field("last_event_id", &self.last_event_id)
            .field("retry", &self.retry)
            .field("ready", &self.ready.len())
            .finish()
    }
}

impl SseParser {
    /// A parser that accepts events of up to `max_event_size` bytes of data.
    pub fn new(max_event_size: usize) -> SseParser {
        SseParser {
            max: max_event_size,
            start: Some(Vec::with_capacity(3)),
            line: Vec::new(),
            line_started: false,
            line_too_long: false,
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: String::new(),
            retry: None,
            discarding: false,
            ready: VecDeque::new(),
        }
    }

    /// The stream's last event id (what a reconnection sends as
    /// `Last-Event-ID`); `None` when none was set or it was set to empty.
    pub fn last_event_id(&self) -> Option<&str> {
        (!self.last_event_id.is_empty()).then_some(self.last_event_id.as_str())
    }

    /// The reconnection delay the server asked for with `retry`, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Whether an event is ready to be taken.
    pub fn has_event(&self) -> bool {
        !self.ready.is_empty()
    }

    /// The next dispatched event, or an error for an event that was skipped
    /// because it was too large. `None` when nothing is ready yet.
    pub fn next_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        self.ready.pop_front().map(|r| match r {
            Ready::Event(e) => Ok(e),
            Ready::TooLarge => Err(SseError::EventTooLarge { limit: self.max }),
        })
    }

    /// Ends the stream: an incomplete event (no blank line after it yet) is
    /// discarded, as the standard requires. Returns whether one was pending.
    /// Events already dispatched can still be taken.
    pub fn finish(&mut self) -> bool {
        if let Some(start) = self.start.take() {
            // Fewer than three bytes in the whole stream.
            self.process(&start);
        }
        let pending = self.has_data || self.line_started || self.discarding;
        self.line.clear();
        self.line_started = false;
        self.line_too_long = false;
        self.after_cr = false;
        self.reset_event();
        self.discarding = false;
        pending
    }

    /// Feeds the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if let Some(mut start) = self.start.take() {
            while start.len() < BOM.len() && !bytes.is_empty() && BOM.starts_with(&start) {
                start.push(bytes[0]);
                bytes = &bytes[1..];
            }
            if start.len() < BOM.len() && BOM.starts_with(&start) {
                // Still undecided: wait for more bytes.
                self.start = Some(start);
                return;
            }
            if start != BOM {
                self.process(&start);
            }
        }
        self.process(bytes);
    }

    fn process(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    self.push_line_bytes(&bytes[..pos]);
                    self.after_cr = bytes[pos] == b'\r';
                    self.end_line();
                    bytes = &bytes[pos + 1..];
                }
                None => {
                    self.push_line_bytes(bytes);
                    return;
                }
            }
        }
    }

    fn push_line_bytes(&mut self, b: &[u8]) {
        if b.is_empty() {
            return;
        }
        self.line_started = true;
        if self.line_too_long || self.discarding {
            return;
        }
        if self.line.len() + b.len() > self.max.saturating_add(FIELD_OVERHEAD) {
            self.line_too_long = true;
            self.line.clear();
            self.too_large();
            return;
        }
        self.line.extend_from_slice(b);
    }

    fn too_large(&mut self) {
        if !self.discarding {
            self.discarding = true;
            self.ready.push_back(Ready::TooLarge);
        }
        self.data = Vec::new();
        self.has_data = false;
    }

    fn end_line(&mut self) {
        let started = std::mem::take(&mut self.line_started);
        self.line_too_long = false;
        if !started {
            self.dispatch();
            return;
        }
        if self.discarding {
            self.line.clear();
            return;
        }
        let line = std::mem::take(&mut self.line);
        self.field(&line);
        // Keep a modest buffer for the next line, drop a huge one.
        self.line = if line.capacity() <= 64 * 1024 {
            let mut l = line;
            l.clear();
            l
        } else {
            Vec::new()
        };
    }

    fn field(&mut self, line: &[u8]) {
        if line.first() == Some(&b':') {
            return; // comment
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max.saturating_add(1) {
                    self.too_large();
                    return;
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => self.event_type = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_event_id = String::from_utf8_lossy(value).into_owned();
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits: only an overflow can fail to parse.
                let ms = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(ms));
            }
            _ => {}
        }
    }

    fn reset_event(&mut self) {
        self.data.clear();
        if self.data.capacity() > 64 * 1024 {
            self.data = Vec::new();
        }
        self.has_data = false;
        self.event_type.clear();
    }

    fn dispatch(&mut self) {
        if self.discarding {
            self.discarding = false;
            self.reset_event();
            return;
        }
        if !self.has_data {
            self.reset_event();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.last() == Some(&b'\n') {
            data.pop();
        }
        let event = if self.event_type.is_empty() {
            "message".to_owned()
        } else {
            std::mem::take(&mut self.event_type)
        };
        self.ready.push_back(Ready::Event(SseEvent {
            event,
            data,
            id: self.last_event_id().map(str::to_owned),
        }));
        self.reset_event();
    }
}

/// What one [`SseReader::step`] produced.
#[derive(Debug)]
pub enum SseStep {
    /// A complete event.
    Event(SseEvent),
    /// Bytes were read but completed no event.
    NoEvent,
    /// The stream ended.
    End,
}

/// Reads events from a byte stream, reading only as much as it needs: each
/// call returns as soon as one event is complete, so a long-lived stream is
/// consumed incrementally.
pub struct SseReader<R> {
    inner: R,
    parser: SseParser,
    buf: Box<[u8]>,
    eof: bool,
}

impl<R> fmt::Debug for SseReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseReader")
            .field("parser", &self.parser)
            .field("eof", &self.eof)
            .finish()
    }
}

impl<R: Read> SseReader<R> {
    /// Reads events from `inner`, each at most `max_event_size` bytes of data.
    pub fn new(inner: R, max_event_size: usize) -> SseReader<R> {
        SseReader {
            inner,
            parser: SseParser::new(max_event_size),
            buf: vec![0; 16 * 1024].into_boxed_slice(),
            eof: false,
        }
    }

    /// The next event; `Ok(None)` at the end of the stream (an incomplete
    /// final event is discarded). After [`SseError::EventTooLarge`] reading
    /// can go on; after [`SseError::Io`] the stream is unusable.
    #[cfg_attr(not(feature = "fuzzing"), allow(dead_code))] // the fuzz targets' entry point
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        loop {
            match self.step()? {
                SseStep::Event(e) => return Ok(Some(e)),
                SseStep::End => return Ok(None),
                SseStep::NoEvent => {}
            }
        }
    }

    /// Like [`next_event`](Self::next_event), but returns after at most one
    /// read of the underlying stream, with [`SseStep::NoEvent`] when that
    /// read completed no event (comments, keep-alives, part of an event), so
    /// the caller can decide whether it still wants the stream.
    pub fn step(&mut self) -> Result<SseStep, SseError> {
        for _ in 0..2 {
            if let Some(r) = self.parser.next_event() {
                return r.map(SseStep::Event);
            }
            if self.eof {
                return Ok(SseStep::End);
            }
            let n = loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(SseError::Io(e)),
                }
            };
            if n == 0 {
                self.eof = true;
                self.parser.finish();
            } else {
                self.parser.feed(&self.buf[..n]);
                if !self.parser.has_event() {
                    return Ok(SseStep::NoEvent);
                }
            }
        }
        // Only reached after a read completed an event or ended the stream,
        // which the second pass returned.
        Ok(SseStep::NoEvent)
    }

    /// The stream's last event id so far.
    pub fn last_event_id(&self) -> Option<&str> {
        self.parser.last_event_id()
    }

    /// The reconnection delay the server asked for, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.parser.retry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_at_any_byte() {
        let mut p = SseParser::new(1024);
        p.feed(b"id: 7\r\nretry: 250\r\ndata: {\"a\":\r\ndata: 1}\r");
        assert!(p.next_event().is_none()); // not dispatched before the blank line
        p.feed(b"\n\r\n");
        let ev = p.next_event().unwrap().unwrap();
        assert_eq!(ev.data, b"{\"a\":\n1}");
        assert_eq!(ev.id.as_deref(), Some("7"));
        assert_eq!(p.retry(), Some(std::time::Duration::from_millis(250)));
    }

    #[test]
    fn step_returns_after_each_read_without_an_event() {
        // A reader that hands out one keep-alive comment per read, forever.
        struct KeepAlive;
        impl Read for KeepAlive {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let c = b": keep-alive\r\n";
                buf[..c.len()].copy_from_slice(c);
                Ok(c.len())
            }
        }
        let mut r = SseReader::new(KeepAlive, 64);
        for _ in 0..3 {
            assert!(matches!(r.step().unwrap(), SseStep::NoEvent));
        }
        let mut r = SseReader::new(&b"data: a\n\ndata: b\n\n"[..], 64);
        assert!(matches!(r.step().unwrap(), SseStep::Event(e) if e.data == b"a"));
        assert!(matches!(r.step().unwrap(), SseStep::Event(e) if e.data == b"b"));
        assert!(matches!(r.step().unwrap(), SseStep::End));
    }

    fn all(input: &[u8], max: usize) -> Vec<Result<SseEvent, String>> {
        let mut p = SseParser::new(max);
        p.feed(input);
        p.finish();
        let mut out = Vec::new();
        while let Some(r) = p.next_event() {
            out.push(r.map_err(|e| e.to_string()));
        }
        out
    }

    fn datas(input: &[u8]) -> Vec<String> {
        all(input, 1 << 20)
            .into_iter()
            .map(|r| String::from_utf8(r.unwrap().data).unwrap())
            .collect()
    }

    #[test]
    fn multi_line_data_and_fields() {
        let evs = all(
            b"event: message\ndata: line one\ndata:line two\ndata\nid: e-1\n\n",
            1024,
        );
        let ev = evs[0].as_ref().unwrap();
        assert_eq!(ev.event, "message");
        assert_eq!(ev.data, b"line one\nline two\n");
        assert_eq!(ev.id.as_deref(), Some("e-1"));
        assert_eq!(evs.len(), 1);
    }

    #[test]
    fn line_endings_crlf_cr_lf_mixed() {
        assert_eq!(
            datas(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"),
            ["a", "b", "c"]
        );
        assert_eq!(datas(b"data: a\r\ndata: b\r\n\r\n"), ["a\nb"]);
    }

    #[test]
    fn comments_unknown_fields_and_default_type() {
        let evs = all(
            b": keep-alive\n:\nfoo: bar\ndata: x\nunknown\n\nevent: other\ndata: y\n\n",
            1024,
        );
        let a = evs[0].as_ref().unwrap();
        assert_eq!((a.event.as_str(), &a.data[..]), ("message", &b"x"[..]));
        let b = evs[1].as_ref().unwrap();
        assert_eq!((b.event.as_str(), &b.data[..]), ("other", &b"y"[..]));
    }

    #[test]
    fn only_one_space_is_stripped() {
        assert_eq!(datas(b"data:  two\n\ndata:none\n\n"), [" two", "none"]);
    }

    #[test]
    fn id_and_retry() {
        let mut p = SseParser::new(1024);
        p.feed(b"id: 1\nretry: 1500\n\n");
        // No data: nothing dispatched, but the id and retry are kept.
        assert!(p.next_event().is_none());
        assert_eq!(p.last_event_id(), Some("1"));
        assert_eq!(p.retry(), Some(Duration::from_millis(1500)));
        p.feed(b"retry: 12x\nretry:\nid: a\0b\ndata: d\n\n");
        assert_eq!(p.retry(), Some(Duration::from_millis(1500)));
        let ev = p.next_event().unwrap().unwrap();
        assert_eq!(ev.id.as_deref(), Some("1"), "an id with NUL is ignored");
        p.feed(b"id\ndata: e\n\n");
        assert_eq!(p.next_event().unwrap().unwrap().id, None);
        assert_eq!(p.last_event_id(), None, "an empty id resets it");
    }

    #[test]
    fn priming_event_with_empty_data_is_dispatched() {
        let evs = all(b"id: p0\ndata: \n\n", 1024);
        let ev = evs[0].as_ref().unwrap();
        assert!(ev.data.is_empty());
        assert_eq!(ev.id.as_deref(), Some("p0"));
    }

    #[test]
    fn incomplete_final_event_is_discarded() {
        let mut p = SseParser::new(1024);
        p.feed(b"data: done\n\ndata: half");
        assert!(p.finish());
        assert_eq!(&p.next_event().unwrap().unwrap().data, b"done");
        assert!(p.next_event().is_none());
        assert!(!SseParser::new(8).finish());
    }

    #[test]
    fn bom_is_skipped_once() {
        assert_eq!(datas(b"\xEF\xBB\xBFdata: x\n\n"), ["x"]);
        let mut p = SseParser::new(64);
        for b in b"\xEF\xBB\xBFdata: y\n\n" {
            p.feed(&[*b]);
        }
        assert_eq!(&p.next_event().unwrap().unwrap().data, b"y");
        // A BOM-like prefix that is not a BOM is data.
        assert_eq!(datas(b"\xEFdata: z\n\ndata: w\n\n"), ["w"]);
        assert_eq!(datas(b"d"), Vec::<String>::new());
    }

    #[test]
    fn split_at_every_byte() {
        let input: &[u8] =
            b": c\r\nevent: message\r\nid: 42\r\ndata: {\"k\":\r\ndata: 1}\r\n\r\ndata: two\r\r";
        for cut in 0..=input.len() {
            let mut p = SseParser::new(1024);
            p.feed(&input[..cut]);
            p.feed(&input[cut..]);
            let a = p.next_event().unwrap().unwrap();
            assert_eq!(a.data, b"{\"k\":\n1}", "cut at {cut}");
            assert_eq!(a.id.as_deref(), Some("42"));
            assert_eq!(&p.next_event().unwrap().unwrap().data, b"two", "cut {cut}");
            assert!(p.next_event().is_none());
        }
        // One byte at a time.
        let mut p = SseParser::new(1024);
        for b in input {
            p.feed(std::slice::from_ref(b));
        }
        assert_eq!(p.next_event().unwrap().unwrap().data, b"{\"k\":\n1}");
    }

    #[test]
    fn crlf_split_across_feeds_is_one_line_end() {
        let mut p = SseParser::new(64);
        p.feed(b"data: a\r");
        p.feed(b"\ndata: b\r");
        p.feed(b"\n\r");
        p.feed(b"\n");
        assert_eq!(&p.next_event().unwrap().unwrap().data, b"a\nb");
        assert!(p.next_event().is_none());
    }

    #[test]
    fn too_large_event_is_skipped_and_parsing_goes_on() {
        let mut input = b"data: ".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend_from_slice(b"\ndata: more\nid: big\n\ndata: ok\n\n");
        let evs = all(&input, 32);
        assert!(evs[0].as_ref().unwrap_err().contains("32-byte"));
        assert_eq!(&evs[1].as_ref().unwrap().data, b"ok");
        assert_eq!(evs.len(), 2);
        // Many small data lines that add up to too much.
        let many = b"data: 0123456789\n".repeat(10);
        let mut input = many.clone();
        input.extend_from_slice(b"\ndata: fine\n\n");
        let evs = all(&input, 64);
        assert!(evs[0].is_err());
        assert_eq!(&evs[1].as_ref().unwrap().data, b"fine");
        // A line longer than the limit fed in small pieces is never buffered.
        let mut p = SseParser::new(16);
        p.feed(b"data: ");
        for _ in 0..10_000 {
            p.feed(b"yyyyyyyy");
        }
        assert!(p.line.len() <= 32);
        p.feed(b"\n\ndata: z\n\n");
        assert!(p.next_event().unwrap().is_err());
        assert_eq!(&p.next_event().unwrap().unwrap().data, b"z");
    }

    #[test]
    fn exact_limit_is_accepted() {
        let mut input = b"data: ".to_vec();
        input.extend(std::iter::repeat_n(b'a', 32));
        input.extend_from_slice(b"\n\n");
        assert_eq!(all(&input, 32)[0].as_ref().unwrap().data.len(), 32);
        let mut two = b"data: ".to_vec();
        two.extend(std::iter::repeat_n(b'a', 16));
        two.extend_from_slice(b"\ndata: ");
        two.extend(std::iter::repeat_n(b'b', 15));
        two.extend_from_slice(b"\n\n");
        assert_eq!(all(&two, 32)[0].as_ref().unwrap().data.len(), 32);
    }

    #[test]
    fn garbage_never_panics() {
        let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
        for max in [0, 1, 7, 64, 4096] {
            let mut p = SseParser::new(max);
            for chunk in junk.chunks(13) {
                p.feed(chunk);
            }
            p.finish();
            while p.next_event().is_some() {}
        }
    }

    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(self.data.len()).min(buf.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn reader_over_small_reads() {
        let input = b"retry: 10\nid: 1\ndata: {}\n\n: ping\n\ndata: [1,\ndata: 2]\n\ndata: cut";
        for step in 1..8 {
            let mut r = SseReader::new(Trickle { data: input, step }, 64);
            assert_eq!(r.next_event().unwrap().unwrap().data, b"{}");
            assert_eq!(r.last_event_id(), Some("1"));
            assert_eq!(r.retry(), Some(Duration::from_millis(10)));
            assert_eq!(r.next_event().unwrap().unwrap().data, b"[1,\n2]");
            assert!(r.next_event().unwrap().is_none());
            assert!(r.next_event().unwrap().is_none());
        }
    }

    #[test]
    fn reader_reports_io_errors() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let mut r = SseReader::new(Broken, 64);
        assert!(matches!(r.next_event(), Err(SseError::Io(_))));
    }
}
