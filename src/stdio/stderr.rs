//! The child's stderr, drained by the `mcp-<name>-io` thread between
//! everything else it does: every line goes to `log::debug!` (target
//! `mcp_client`), to the connection's log channel and to the
//! [`StderrTail`] that error messages quote. A chatty server can never fill
//! its stderr pipe and stall, as long as the thread is not held up by a
//! callback of the host.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStderr;
use std::time::Instant;

use crate::limits::MAX_STDERR_LINE;
use crate::log::LogTag;
use crate::peer::Peer;

use super::tail::StderrTail;
use crate::poll::{poll_fds, pollfd};

/// How much is still read after the client closed (the last lines of the
/// killed group), so that a descendant outside the group that writes
/// without pause cannot keep the thread from ending.
const STDERR_AFTER_STOP: usize = 64 * 1024;

/// How much one drain reads before it lets the thread look at its other
/// pipes: a server writing stderr without pause cannot starve its stdout.
const DRAIN_BUDGET: usize = 256 * 1024;

/// How much one `read` of stderr takes at most.
const STDERR_CHUNK: usize = 16 * 1024;

/// What one drain found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Drain {
    /// The pipe is empty for now (or the budget is used up).
    More,
    /// End of file: every writer closed it.
    Ended,
}

/// Our read end of the child's stderr and the line being assembled.
pub(super) struct StderrReader {
    /// `None` once it reached end of file (or failed): no longer polled.
    pipe: Option<ChildStderr>,
    lines: LineSplitter,
    /// Bytes still read once the client closed.
    after_stop: usize,
    /// Where reads land: allocated on first use, never zeroed (a read
    /// initialises what it returns).
    chunk: Vec<u8>,
}

impl StderrReader {
    /// Makes our read end non-blocking (the child has its own open file
    /// description) and wraps it.
    pub(super) fn new(stderr: ChildStderr) -> io::Result<StderrReader> {
        super::set_nonblocking(stderr.as_raw_fd())?;
        Ok(StderrReader {
            pipe: Some(stderr),
            lines: LineSplitter::default(),
            after_stop: STDERR_AFTER_STOP,
            chunk: Vec::new(),
        })
    }

    /// The descriptor to poll, while the pipe is open (else -1, which
    /// `poll` ignores).
    pub(super) fn fd(&self) -> RawFd {
        self.pipe.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Whether it reached end of file.
    pub(super) fn ended(&self) -> bool {
        self.pipe.is_none()
    }

    /// Reads what the pipe holds and hands on every complete line. With
    /// `stopped` (the client closed) at most [`STDERR_AFTER_STOP`] bytes in
    /// all are still read.
    pub(super) fn drain(&mut self, peer: &Peer, tail: &StderrTail, stopped: bool) -> Drain {
        let mut budget = DRAIN_BUDGET;
        loop {
            let Some(pipe) = self.pipe.as_ref() else {
                return Drain::Ended;
            };
            if self.chunk.capacity() == 0 {
                self.chunk = Vec::with_capacity(STDERR_CHUNK);
            }
            self.chunk.clear();
            let mut want = self.chunk.capacity().min(budget);
            if stopped {
                want = want.min(self.after_stop);
            }
            if want == 0 {
                return if stopped {
                    self.end(peer, tail)
                } else {
                    Drain::More
                };
            }
            // SAFETY: reads into our own buffer's spare capacity, valid for
            // `want` (at most its capacity) bytes, from our read end of the
            // pipe, open while `self.pipe` is.
            let n = unsafe { libc::read(pipe.as_raw_fd(), self.chunk.as_mut_ptr().cast(), want) };
            if n == 0 {
                return self.end(peer, tail);
            }
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock if stopped => return self.end(peer, tail),
                    io::ErrorKind::WouldBlock => return Drain::More,
                    _ => return self.end(peer, tail),
                }
            }
            let n = n as usize;
            budget -= n;
            if stopped {
                self.after_stop -= n;
            }
            // SAFETY: `read` initialised the first `n` bytes (n ≤ want ≤
            // capacity).
            unsafe { self.chunk.set_len(n) };
            let chunk = std::mem::take(&mut self.chunk);
            self.take_lines(&chunk, peer, tail);
            self.chunk = chunk;
        }
    }

    /// Hands on the complete lines of `bytes`, keeping the partial last one.
    fn take_lines(&mut self, bytes: &[u8], peer: &Peer, tail: &StderrTail) {
        self.lines.push(bytes, &mut |line| emit(peer, tail, line));
    }

    /// End of file: the last line, if unterminated, is handed on and the
    /// pipe closed.
    fn end(&mut self, peer: &Peer, tail: &StderrTail) -> Drain {
        self.lines.finish(&mut |line| emit(peer, tail, line));
        self.pipe = None;
        self.chunk = Vec::new();
        Drain::Ended
    }

    /// Reads until end of file, an empty pipe, or `deadline`: what a server
    /// that has exited wrote last is then handed on (a process it started
    /// may keep the pipe open and keep writing; the deadline bounds that).
    pub(super) fn catch_up(&mut self, peer: &Peer, tail: &StderrTail, deadline: Instant) {
        while !self.ended() && Instant::now() < deadline {
            if self.drain(peer, tail, false) == Drain::Ended {
                return;
            }
            let mut fds = [pollfd(self.fd())];
            if poll_fds(&mut fds, Some(std::time::Duration::ZERO)).is_err() || fds[0].revents == 0 {
                return;
            }
        }
    }
}

/// Hands a line on to the log, the log channel and the tail.
fn emit(peer: &Peer, tail: &StderrTail, line: String) {
    ::log::debug!(target: "mcp_client", "[{}] {line}", peer.name);
    tail.push(&line);
    peer.log_line(LogTag::Stderr, line);
}

/// Cuts a byte stream into lines of at most [`MAX_STDERR_LINE`] bytes (the
/// rest of a longer line is dropped and the line marked `[…truncated]`),
/// decoded lossily, without the `\r` of a CRLF.
#[derive(Default)]
struct LineSplitter {
    line: Vec<u8>,
    /// The line being assembled was longer than the bound.
    truncated: bool,
}

impl LineSplitter {
    /// Hands on every line `bytes` completes; keeps the unterminated rest.
    fn push(&mut self, mut bytes: &[u8], out: &mut dyn FnMut(String)) {
        while let Some(pos) = memchr::memchr(b'\n', bytes) {
            self.append(&bytes[..pos]);
            out(self.take());
            bytes = &bytes[pos + 1..];
        }
        self.append(bytes);
    }

    /// Hands on an unterminated last line, if any.
    fn finish(&mut self, out: &mut dyn FnMut(String)) {
        if !self.line.is_empty() || self.truncated {
            out(self.take());
        }
    }

    fn append(&mut self, part: &[u8]) {
        let room = MAX_STDERR_LINE.saturating_sub(self.line.len());
        if part.len() > room {
            self.truncated = true;
        }
        self.line.extend_from_slice(&part[..part.len().min(room)]);
    }

    fn take(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.line).into_owned();
        if line.ends_with('\r') {
            line.pop();
        }
        if std::mem::take(&mut self.truncated) {
            line.push_str(" […truncated]");
        }
        self.line.clear();
        if self.line.capacity() > 4096 {
            self.line = Vec::new();
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(parts: &[&[u8]]) -> Vec<String> {
        let mut s = LineSplitter::default();
        let mut out = Vec::new();
        for p in parts {
            s.push(p, &mut |l| out.push(l));
        }
        s.finish(&mut |l| out.push(l));
        out
    }

    #[test]
    fn lines_across_reads_crlf_and_last_unterminated() {
        assert_eq!(
            split(&[b"one\r\ntw", b"o\n\nthr", b"ee"]),
            ["one", "two", "", "three"]
        );
    }

    #[test]
    fn long_lines_are_cut_and_marked() {
        let long = vec![b'x'; MAX_STDERR_LINE + 10];
        let out = split(&[&long[..100], &long[100..], b"\nok\n"]);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            format!("{} […truncated]", "x".repeat(MAX_STDERR_LINE))
        );
        assert_eq!(out[1], "ok");
    }
}
