//! Lines cut out of the child's stdout in place.
//!
//! The bytes are read straight into one buffer and a line is a slice of
//! it. A `BufReader` in front of a line `Vec` copied every byte once more
//! and read a large reply 64 KiB at a time whatever the pipe held: a 1 MiB
//! reply took sixteen `read`s and a 1 MiB `memcpy` after them, about 30 µs
//! of a 700 µs call (measured). Here a read asks for all the room the
//! buffer has, and the buffer grows while a line does not fit.
//!
//! The buffer starts at [`STDOUT_READ_BUFFER`] bytes, never initialised
//! beyond what was read (a server that only sends small messages keeps a
//! page or two of it resident), and is given back once a large line has
//! been consumed and the lines after it use less than a quarter of it.

use std::io;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::process::ChildStdout;

use crate::limits::STDOUT_READ_BUFFER;

/// Least free room a read asks for: with less, the buffer is compacted
/// or grown first.
const MIN_READ: usize = 16 * 1024;

/// Where bytes come from: the child's stdout, or a test's script.
pub(super) trait Source {
    /// Reads into `buf[..room]`'s free capacity (`buf.len()..`), at most
    /// `room` bytes, and extends `buf` by what was read. `Ok(0)` is end of
    /// file.
    fn read_into(&mut self, buf: &mut Vec<u8>, room: usize) -> io::Result<usize>;
}

impl Source for ChildStdout {
    fn read_into(&mut self, buf: &mut Vec<u8>, room: usize) -> io::Result<usize> {
        let room = room.min(buf.capacity() - buf.len());
        // SAFETY: the destination is the vector's spare capacity, `room`
        // bytes of it (checked above), which `read` only writes to; the
        // length then covers exactly the bytes the kernel wrote.
        unsafe {
            let end = buf.as_mut_ptr().add(buf.len());
            let n = libc::read(self.as_raw_fd(), end.cast(), room);
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            buf.set_len(buf.len() + n);
            Ok(n)
        }
    }
}

/// Outcome of looking for the next line.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// A whole line: [`LineBuf::line`] has it, [`LineBuf::consume`] steps
    /// past it. The last line before end of file needs no newline.
    Complete,
    /// End of file, nothing left.
    Eof,
    /// The line is longer than the limit; it is not buffered whole.
    TooLong,
}

/// The bytes read and not yet consumed, and where the next line starts.
pub(super) struct LineBuf {
    buf: Vec<u8>,
    /// First byte of the current line.
    start: usize,
    /// `buf[start..searched]` holds no newline.
    searched: usize,
    /// End of the complete line found last (its newline, or the end of the
    /// bytes at end of file), while it is not consumed.
    end: Option<usize>,
}

impl LineBuf {
    /// An empty buffer of [`STDOUT_READ_BUFFER`] bytes (not touched until
    /// read into).
    pub(super) fn new() -> LineBuf {
        LineBuf::with_capacity(STDOUT_READ_BUFFER)
    }

    fn with_capacity(n: usize) -> LineBuf {
        LineBuf {
            buf: Vec::with_capacity(n),
            start: 0,
            searched: 0,
            end: None,
        }
    }

    /// An empty buffer that holds nothing (after the connection ended).
    pub(super) fn empty() -> LineBuf {
        LineBuf::with_capacity(0)
    }

    /// Whether a complete line is buffered, found or not.
    pub(super) fn has_line(&self) -> bool {
        self.end.is_some() || memchr::memchr(b'\n', &self.buf[self.searched..]).is_some()
    }

    /// The complete line last found, without its newline.
    pub(super) fn line(&self) -> &[u8] {
        &self.buf[self.start..self.end.unwrap_or(self.start)]
    }

    /// Steps past the line last found and its newline.
    pub(super) fn consume(&mut self) {
        let Some(end) = self.end.take() else { return };
        let used = end - self.start;
        self.start = end + 1;
        self.searched = self.start;
        if self.start >= self.buf.len() {
            self.clear();
        }
        // Keep a large buffer while it is used (a run of large replies
        // would otherwise grow it again and fault its pages in for each
        // one), give it back once a line used less than a quarter of it.
        let cap = self.buf.capacity();
        if cap > STDOUT_READ_BUFFER && used < cap / 4 {
            let rest = &self.buf[self.start..];
            let mut smaller = LineBuf::with_capacity(STDOUT_READ_BUFFER.max(rest.len()));
            smaller.buf.extend_from_slice(rest);
            *self = smaller;
        }
    }

    /// Forgets everything buffered.
    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.searched = 0;
        self.end = None;
    }

    /// Finds the next line, reading from `src` until one is complete. A
    /// line longer than `max` bytes is `TooLong`. `partial` sees the line
    /// so far after each read that did not complete it (the reader scans a
    /// large frame while the rest arrives).
    ///
    /// On a non-blocking source `Err(WouldBlock)` keeps the partial line;
    /// the next call continues it. The line found stays in place until
    /// [`consume`](LineBuf::consume): a second call before it finds the
    /// same line.
    pub(super) fn next_line(
        &mut self,
        src: &mut impl Source,
        max: usize,
        partial: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Line> {
        if self.end.is_some() {
            return Ok(Line::Complete);
        }
        let mut read_some = false;
        loop {
            // Each byte is searched once: `searched` moves past what was.
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.searched..]) {
                let end = self.searched + pos;
                self.searched = end;
                if end - self.start > max {
                    return Ok(Line::TooLong);
                }
                self.end = Some(end);
                return Ok(Line::Complete);
            }
            self.searched = self.buf.len();
            let open = self.buf.len() - self.start;
            if open > max {
                return Ok(Line::TooLong);
            }
            if read_some {
                partial(&self.buf[self.start..]);
            }
            self.make_room(max - open);
            let room = self.buf.capacity() - self.buf.len();
            let n = match src.read_into(&mut self.buf, room) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                if self.start == self.buf.len() {
                    return Ok(Line::Eof);
                }
                // The last line, without a newline.
                self.end = Some(self.buf.len());
                return Ok(Line::Complete);
            }
            read_some = true;
        }
    }

    /// Reads and discards what `src` has, until it would block, fails or
    /// ends. Returns whether it ended (end of file or an error other than
    /// `WouldBlock`).
    pub(super) fn discard_from(&mut self, src: &mut impl Source) -> bool {
        self.clear();
        loop {
            let room = self.buf.capacity().max(MIN_READ);
            self.buf.reserve(room);
            match src.read_into(&mut self.buf, room) {
                Ok(0) => return true,
                Ok(_) => self.buf.clear(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
            }
        }
    }

    /// At least [`MIN_READ`] bytes of room after the buffered bytes: the
    /// current line moved to the front when that frees half the buffer, or
    /// the buffer grown (to twice its size, but by no more than the line
    /// may still grow, `left`, and a read's worth).
    fn make_room(&mut self, left: usize) {
        let cap = self.buf.capacity();
        let room = cap - self.buf.len();
        if room >= MIN_READ {
            return;
        }
        if self.start > 0 && room + self.start >= MIN_READ.max(cap / 2) {
            let live: Range<usize> = self.start..self.buf.len();
            self.buf.copy_within(live.clone(), 0);
            self.buf.truncate(live.len());
            self.searched -= self.start;
            self.start = 0;
            return;
        }
        let grow = cap.max(MIN_READ).min(left.saturating_add(MIN_READ));
        self.buf.reserve_exact(grow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that has `parts` one at a time, then would block (or ends,
    /// with `eof`).
    struct Script {
        parts: Vec<Vec<u8>>,
        eof: bool,
        /// The largest room a read was offered.
        largest_room: usize,
    }

    impl Script {
        fn new(parts: &[&[u8]], eof: bool) -> Script {
            Script {
                parts: parts.iter().map(|p| p.to_vec()).collect(),
                eof,
                largest_room: 0,
            }
        }
    }

    impl Source for Script {
        fn read_into(&mut self, buf: &mut Vec<u8>, room: usize) -> io::Result<usize> {
            self.largest_room = self.largest_room.max(room);
            if self.parts.is_empty() {
                return match self.eof {
                    true => Ok(0),
                    false => Err(io::ErrorKind::WouldBlock.into()),
                };
            }
            let p = &mut self.parts[0];
            let n = p.len().min(room);
            buf.extend_from_slice(&p[..n]);
            p.drain(..n);
            if p.is_empty() {
                self.parts.remove(0);
            }
            Ok(n)
        }
    }

    fn lines(b: &mut LineBuf, src: &mut Script, max: usize) -> Vec<Result<Vec<u8>, Line>> {
        let mut out = Vec::new();
        loop {
            match b.next_line(src, max, &mut |_| {}) {
                Ok(Line::Complete) => {
                    out.push(Ok(b.line().to_vec()));
                    b.consume();
                }
                Ok(other) => {
                    out.push(Err(other));
                    return out;
                }
                Err(e) => {
                    assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
                    return out;
                }
            }
        }
    }

    #[test]
    fn lines_across_reads_with_a_last_line_without_newline() {
        let mut src = Script::new(&[b"abc\r\n\nlo", b"ng\nx", b"y"], true);
        let mut b = LineBuf::new();
        let got = lines(&mut b, &mut src, 8);
        let want: Vec<Result<Vec<u8>, Line>> = vec![
            Ok(b"abc\r".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"long".to_vec()),
            Ok(b"xy".to_vec()),
            Err(Line::Eof),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_line_longer_than_the_limit_is_too_long() {
        let mut src = Script::new(&[b"12345678\n123456789\n"], true);
        let mut b = LineBuf::new();
        let got = lines(&mut b, &mut src, 8);
        assert_eq!(got, vec![Ok(b"12345678".to_vec()), Err(Line::TooLong)]);
        // Also without its newline yet: the limit is checked as it arrives.
        let mut src = Script::new(&[b"123456789"], false);
        let mut b = LineBuf::new();
        assert_eq!(lines(&mut b, &mut src, 8), vec![Err(Line::TooLong)]);
    }

    #[test]
    fn a_partial_line_survives_would_block_and_is_shown_to_partial() {
        let mut src = Script::new(&[b"{\"a\":", b"1}\n{\"b\""], false);
        let mut b = LineBuf::new();
        let mut seen = Vec::new();
        let r = b.next_line(&mut src, 64, &mut |l| seen.push(l.to_vec()));
        assert_eq!(r.unwrap(), Line::Complete);
        assert_eq!(b.line(), b"{\"a\":1}");
        assert_eq!(
            seen,
            vec![b"{\"a\":".to_vec()],
            "only the read that left the line open"
        );
        // Not consumed: the same line again.
        assert_eq!(
            b.next_line(&mut src, 64, &mut |_| {}).unwrap(),
            Line::Complete
        );
        assert_eq!(b.line(), b"{\"a\":1}");
        b.consume();
        let e = b.next_line(&mut src, 64, &mut |_| {}).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(!b.has_line());
        src.parts.push(b":2}\n".to_vec());
        assert_eq!(
            b.next_line(&mut src, 64, &mut |_| {}).unwrap(),
            Line::Complete
        );
        assert_eq!(b.line(), b"{\"b\":2}", "the partial line was kept");
    }

    #[test]
    fn has_line_sees_lines_read_but_not_yet_found() {
        let mut src = Script::new(&[b"a\nb\nc"], false);
        let mut b = LineBuf::new();
        assert!(!b.has_line());
        assert_eq!(
            b.next_line(&mut src, 64, &mut |_| {}).unwrap(),
            Line::Complete
        );
        assert!(b.has_line(), "the found line");
        b.consume();
        assert!(b.has_line(), "b, read with a");
        assert_eq!(
            b.next_line(&mut src, 64, &mut |_| {}).unwrap(),
            Line::Complete
        );
        b.consume();
        assert!(!b.has_line(), "c has no newline yet");
    }

    /// A large line is read in reads as large as the buffer allows, not in
    /// pieces of the initial size, and its bytes are exact however they
    /// were split and moved.
    #[test]
    fn a_large_line_grows_the_buffer_and_big_reads_follow() {
        let big: Vec<u8> = (0..3 * STDOUT_READ_BUFFER + 17)
            .map(|i| b'a' + (i % 26) as u8)
            .collect();
        let mut stream = b"small\n".to_vec();
        stream.extend_from_slice(&big);
        stream.extend_from_slice(b"\nafter\n");
        // Split at awkward places.
        let parts: Vec<&[u8]> = stream.chunks(40_000).collect();
        let mut src = Script::new(&parts, true);
        let mut b = LineBuf::new();
        let mut partials = 0;
        let mut got = Vec::new();
        loop {
            match b
                .next_line(&mut src, 1 << 20, &mut |_| partials += 1)
                .unwrap()
            {
                Line::Complete => {
                    got.push(b.line().to_vec());
                    b.consume();
                }
                other => {
                    assert_eq!(other, Line::Eof);
                    break;
                }
            }
        }
        assert_eq!(got, vec![b"small".to_vec(), big, b"after".to_vec()]);
        assert!(partials >= 2, "the large line was shown while it arrived");
        assert!(
            src.largest_room > STDOUT_READ_BUFFER,
            "reads grew with the line ({} bytes of room at most)",
            src.largest_room
        );
        // After a small line the large buffer is given back.
        assert!(
            b.buf.capacity() <= STDOUT_READ_BUFFER,
            "{}",
            b.buf.capacity()
        );
    }

    #[test]
    fn lines_kept_at_the_end_move_to_the_front_not_grow_the_buffer() {
        // Many small lines whose boundaries never meet a read's end.
        let line = b"0123456789abcdef0123456789abcdef0123456789abcdef012345678\n";
        let stream: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 10_000)
            .collect();
        let parts: Vec<&[u8]> = stream.chunks(7_001).collect();
        let mut src = Script::new(&parts, true);
        let mut b = LineBuf::new();
        let got = lines(&mut b, &mut src, 1024);
        assert_eq!(got.len(), 10_001);
        assert!(got[..10_000]
            .iter()
            .all(|l| l.as_deref() == Ok(&line[..line.len() - 1])));
        assert_eq!(b.buf.capacity(), STDOUT_READ_BUFFER, "never grown");
    }

    #[test]
    fn discard_reads_until_would_block_or_end() {
        let mut src = Script::new(&[&[b'x'; 100_000], b"y\n"], false);
        let mut b = LineBuf::new();
        assert!(!b.discard_from(&mut src), "would block: not ended");
        assert!(src.parts.is_empty());
        assert!(!b.has_line());
        let mut src = Script::new(&[b"z"], true);
        assert!(b.discard_from(&mut src), "end of file");
    }
}
