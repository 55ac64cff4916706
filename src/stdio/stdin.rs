//! The child's stdin: written by the callers themselves, and by the I/O
//! thread only for what the pipe did not take at once.
//!
//! A request that is the only one in flight goes to the pipe with one
//! non-blocking `write` on its caller's thread when nothing written earlier
//! is still waiting: no thread hand-off, no queue. Everything else (a
//! request sent while others are in flight, a notification, a response) is
//! appended to an outbox that the `mcp-<name>-io` thread writes out, many
//! messages per `write`, as the server then reads them in one `read`
//! (measured: writing each on its caller's thread lost 9 % of throughput
//! at 8 and 64 in flight). A caller writing finds what others appended
//! meanwhile and writes it too (see [`StdinShared`]). What the pipe does
//! not take (it is full: the server is not reading) stays in the outbox,
//! in order, and everything sent after it is appended there, so messages
//! never overtake one another. The I/O thread, woken once when the outbox
//! stops being empty with nobody writing, waits for room in the pipe
//! (`POLLOUT`) beside everything else it waits for.
//!
//! The outbox is bounded by [`ClientOptions::write_queue_capacity`]
//! messages: a caller finding it full waits for room up to its deadline and
//! then gets [`McpError::Backpressure`](crate::McpError::Backpressure), so a
//! server that stops reading costs bounded memory.
//!
//! [`ClientOptions::write_queue_capacity`]: crate::ClientOptions::write_queue_capacity

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStdin;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::peer::SendFailure;

/// An outbox buffer above this size is given back once it is written out.
const OUTBOX_KEEP: usize = 1024 * 1024;

/// What [`StdinShared::send`] did with a message.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Sent {
    /// Written to the pipe whole (or handed to the caller writing now).
    Written,
    /// Kept in the outbox; when `wake` is true nobody is writing it, and
    /// the I/O thread must be woken to wait for room in the pipe.
    Queued { wake: bool },
}

/// How many batches a caller that became the writer writes for others
/// after its own message, before it leaves the rest to the I/O thread: a
/// caller is not held up indefinitely by the messages of others.
const MAX_BATCHES_PER_CALLER: usize = 4;

/// The write end of the child's stdin and the messages waiting for it.
///
/// Writes are combined: a lone caller finding the pipe idle becomes the
/// writer and writes, outside the lock, its message and then whatever
/// others appended meanwhile in one `write` each round (at most
/// [`MAX_BATCHES_PER_CALLER`] rounds); the others only append and return,
/// and what no caller writes the I/O thread does. Under load, many
/// messages go out in one system call without a writer thread.
pub(super) struct StdinShared {
    state: Mutex<Outbox>,
    /// Notified when the outbox shrinks or writing stops.
    room: Condvar,
    /// The pipe's descriptor, for the I/O thread's `poll` (only meaningful
    /// while [`StdinShared::wants_write`] is true).
    fd: RawFd,
    /// Most messages the outbox holds.
    capacity: usize,
}

struct Outbox {
    /// `None` once closed: by the client, or after a write failed. Shared
    /// with a writer writing outside the lock: the pipe closes when the
    /// last of them lets go.
    stdin: Option<Arc<ChildStdin>>,
    /// Bytes accepted and not yet taken by a writer, in order.
    buf: Vec<u8>,
    /// Lengths of the messages in `buf` (the first may be the unwritten
    /// rest of a message).
    lens: VecDeque<usize>,
    /// A writer (a caller or the I/O thread) is writing a batch taken from
    /// `buf`, outside the lock: nobody else writes meanwhile.
    writing: bool,
    /// Close stdin (the child sees end of file) once everything is written.
    close_when_flushed: bool,
    /// Why writing stopped, when a write failed.
    failed: Option<String>,
    /// A spare buffer, so that taking a batch does not allocate.
    spare: Vec<u8>,
}

impl Outbox {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        self.lens.push_back(bytes.len());
    }

    /// Puts the unwritten rest of a writer's message (or batch) before
    /// whatever was appended meanwhile, as one message.
    fn push_front(&mut self, rest: &[u8]) {
        if rest.is_empty() {
            return;
        }
        let mut b = Vec::with_capacity(rest.len() + self.buf.len());
        b.extend_from_slice(rest);
        b.extend_from_slice(&self.buf);
        self.buf = b;
        self.lens.push_front(rest.len());
    }

    /// Takes everything waiting as the next batch (the writer's).
    fn take_batch(&mut self) -> Vec<u8> {
        self.lens.clear();
        let next = std::mem::take(&mut self.spare);
        std::mem::replace(&mut self.buf, next)
    }

    /// Ends a writer's batch: the unwritten rest (after `done` bytes of
    /// `batch`) goes back to the front; the buffer is kept for the next.
    fn give_back(&mut self, mut batch: Vec<u8>, done: usize) {
        self.push_front(&batch[done..]);
        batch.clear();
        if batch.capacity() <= OUTBOX_KEEP {
            self.spare = batch;
        }
    }

    /// Closes the pipe and forgets what was not written.
    fn close(&mut self) {
        // Dropping the ChildStdin closes our write end: the child sees EOF.
        drop(self.stdin.take());
        self.buf = Vec::new();
        self.spare = Vec::new();
        self.lens.clear();
    }
}

/// The reason calls fail with once a write to stdin failed with `why`.
pub(super) fn write_failed(why: impl std::fmt::Display) -> String {
    format!("writing to the server's stdin failed: {why}")
}

/// Writes as much of `bytes` as the non-blocking pipe takes.
fn write_some(stdin: &ChildStdin, bytes: &[u8]) -> (usize, Option<io::Error>) {
    let mut w: &ChildStdin = stdin;
    let mut done = 0;
    while done < bytes.len() {
        match w.write(&bytes[done..]) {
            Ok(0) => return (done, Some(io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (done, None),
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

impl StdinShared {
    /// Makes our write end non-blocking (the child has its own open file
    /// description) and wraps it.
    pub(super) fn new(stdin: ChildStdin, capacity: usize) -> io::Result<StdinShared> {
        let fd = stdin.as_raw_fd();
        super::set_nonblocking(fd)?;
        Ok(StdinShared {
            state: Mutex::new(Outbox {
                stdin: Some(Arc::new(stdin)),
                buf: Vec::new(),
                lens: VecDeque::new(),
                writing: false,
                close_when_flushed: false,
                failed: None,
                spare: Vec::new(),
            }),
            room: Condvar::new(),
            fd,
            capacity: capacity.max(1),
        })
    }

    fn closed(st: &Outbox) -> SendFailure {
        SendFailure::Closed(match &st.failed {
            Some(why) => write_failed(why),
            None => "the server's stdin is closed".into(),
        })
    }

    /// Writes `line` at once when it is `alone` and the pipe is idle, else
    /// appends it to the outbox for the writer of the moment or the I/O
    /// thread; with the outbox full, waits for room until `deadline`
    /// (`None`: does not wait).
    pub(super) fn send(
        &self,
        line: &[u8],
        deadline: Option<Instant>,
        alone: bool,
    ) -> Result<Sent, SendFailure> {
        let mut st = self.state.lock();
        loop {
            if st.stdin.is_none() || st.close_when_flushed {
                return Err(Self::closed(&st));
            }
            if alone && !st.writing && st.lens.is_empty() {
                break;
            }
            if st.lens.len() < self.capacity {
                let wake = !st.writing && st.lens.is_empty();
                st.push(line);
                return Ok(Sent::Queued { wake });
            }
            match deadline {
                Some(d) if Instant::now() < d => {
                    self.room.wait_until(&mut st, d);
                }
                _ => return Err(SendFailure::Full),
            }
        }
        // The pipe is idle: this caller is the writer.
        st.writing = true;
        let Some(stdin) = st.stdin.clone() else {
            unreachable!("checked above");
        };
        drop(st);
        let (done, err) = write_some(&stdin, line);
        let mut batch_done = err.is_some() || done < line.len();
        let mut st = self.state.lock();
        st.push_front(&line[done..]);
        let mut batches = 0;
        while !batch_done && !st.lens.is_empty() && batches < MAX_BATCHES_PER_CALLER {
            batches += 1;
            let batch = st.take_batch();
            self.room.notify_all();
            drop(st);
            let (done, err) = write_some(&stdin, &batch);
            batch_done = err.is_some() || done < batch.len();
            st = self.state.lock();
            st.give_back(batch, done);
        }
        Ok(self.end_writing(&mut st, done == line.len()))
    }

    /// The writer leaves: closes stdin when asked and everything is out
    /// (and forgets what it gave back if stdin was abandoned meanwhile);
    /// whatever is left is the I/O thread's (woken when `Queued { wake }`).
    fn end_writing(&self, st: &mut Outbox, own_written: bool) -> Sent {
        st.writing = false;
        self.room.notify_all();
        if st.stdin.is_none() || (st.lens.is_empty() && st.close_when_flushed) {
            st.close();
        }
        if st.lens.is_empty() {
            return if own_written {
                Sent::Written
            } else {
                Sent::Queued { wake: false }
            };
        }
        Sent::Queued { wake: true }
    }

    /// Whether the I/O thread should wait for room in the pipe.
    pub(super) fn wants_write(&self) -> bool {
        let st = self.state.lock();
        st.stdin.is_some() && !st.writing && !st.lens.is_empty()
    }

    /// The descriptor to poll for `POLLOUT`.
    pub(super) fn fd(&self) -> RawFd {
        self.fd
    }

    /// Called by the I/O thread when the pipe has room: writes what it
    /// takes. On a write error the pipe is closed and the error returned
    /// (once; later calls do nothing).
    pub(super) fn flush(&self) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.writing || st.lens.is_empty() {
            return Ok(());
        }
        let Some(stdin) = st.stdin.clone() else {
            return Ok(());
        };
        st.writing = true;
        let batch = st.take_batch();
        drop(st);
        let (done, err) = write_some(&stdin, &batch);
        let mut st = self.state.lock();
        st.give_back(batch, done);
        if let Some(e) = err {
            st.writing = false;
            st.failed = Some(e.to_string());
            st.close();
            self.room.notify_all();
            return Err(e);
        }
        self.end_writing(&mut st, true);
        Ok(())
    }

    /// Closes stdin once what is in the outbox is written (at once when it
    /// is empty); later sends fail. Returns whether the I/O thread must be
    /// woken to finish the job.
    pub(super) fn close_when_flushed(&self) -> bool {
        let mut st = self.state.lock();
        st.close_when_flushed = true;
        self.room.notify_all();
        if st.writing {
            // The writer closes it when done.
            return false;
        }
        if st.lens.is_empty() || st.stdin.is_none() {
            st.close();
            return false;
        }
        true
    }

    /// Closes stdin now, dropping what was not written (the client is
    /// closing, or the connection has ended). A writer busy right now
    /// holds the pipe until its `write` returns, then lets go.
    pub(super) fn abandon(&self) {
        let mut st = self.state.lock();
        st.close_when_flushed = true;
        st.close();
        self.room.notify_all();
    }
}
