//! The last lines a server wrote on stderr, kept so that the error about
//! its end can say why it ended: a server that exits during start-up
//! because it lacks an environment variable usually says so on stderr
//! (`Error: BRAVE_API_KEY environment variable is required`), and without
//! that line the error reads only "the server exited (exit status: 1)".
//!
//! Bounded: [`TAIL_LINES`] lines of at most [`TAIL_LINE_CHARS`] characters
//! each. The values of the configuration's `env` are replaced by
//! `<redacted>` before a line is kept, since errors never carry a secret.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use parking_lot::Mutex;

/// How many of the last stderr lines an error quotes.
pub(super) const TAIL_LINES: usize = 5;

/// How many characters of one stderr line an error quotes.
pub(super) const TAIL_LINE_CHARS: usize = 200;

/// Env values shorter than this are not redacted: they are too short to be
/// a credential (`1`, `true`, `info`) and common enough in ordinary text
/// that replacing them would garble the lines.
const MIN_SECRET_LEN: usize = 6;

/// How long the end of the connection waits for the stderr thread to read
/// what the exited server wrote last (its stdout and stderr close at the
/// same moment, but are read by different threads). The wait ends as soon
/// as stderr reaches end of file, or the stderr thread has read everything
/// in the pipe (a process the server started keeps stderr open, but what
/// the server itself wrote is all there once it has exited); the bound only
/// matters when that process keeps writing.
const STDERR_EOF_WAIT: Duration = Duration::from_millis(250);

/// The bounded tail of a server's stderr.
pub(super) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    secrets: Vec<String>,
    /// Disconnected when the stderr thread has read to end of file.
    ended: Receiver<()>,
    /// The pipe the lines come from, to tell when all of it is read.
    pipe: OnceLock<Arc<super::StderrPipe>>,
}

impl StderrTail {
    /// A tail redacting `env_values`; `ended` must disconnect when the
    /// stderr thread stops reading.
    pub(super) fn new<'a>(
        env_values: impl IntoIterator<Item = &'a String>,
        ended: Receiver<()>,
    ) -> StderrTail {
        let mut secrets: Vec<String> = env_values
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .cloned()
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        StderrTail {
            lines: Mutex::new(VecDeque::with_capacity(TAIL_LINES)),
            secrets,
            ended,
            pipe: OnceLock::new(),
        }
    }

    /// Names the pipe the lines are read from (see [`StderrTail::explain`]).
    pub(super) fn watch(&self, pipe: Arc<super::StderrPipe>) {
        let _ = self.pipe.set(pipe);
    }

    /// Keeps `line` (redacted, then cut), dropping the oldest beyond
    /// [`TAIL_LINES`]. Blank lines are not kept: they say nothing.
    pub(super) fn push(&self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let mut text = line.to_owned();
        // Redacted before the cut, so a secret straddling the cut is not
        // half quoted.
        for s in &self.secrets {
            if text.contains(s.as_str()) {
                text = text.replace(s.as_str(), "<redacted>");
            }
        }
        if text.chars().count() > TAIL_LINE_CHARS {
            text = text.chars().take(TAIL_LINE_CHARS).collect();
            text.push('…');
        }
        let mut lines = self.lines.lock();
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(text);
    }

    /// `reason` followed by the last stderr lines, once stderr has been
    /// read to its end (waiting at most [`STDERR_EOF_WAIT`]).
    pub(super) fn explain(&self, reason: String) -> String {
        // Disconnected: stderr is read to its end. Caught up: a process the
        // server started still holds it, but what the server wrote is read.
        // Timed out: that process keeps writing; what arrived is quoted.
        let deadline = Instant::now() + STDERR_EOF_WAIT;
        loop {
            if !matches!(self.ended.try_recv(), Err(TryRecvError::Empty))
                || self.pipe.get().is_some_and(|p| p.caught_up())
            {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let slice = left.min(Duration::from_millis(1));
            if slice.is_zero()
                || matches!(
                    self.ended.recv_timeout(slice),
                    Ok(()) | Err(RecvTimeoutError::Disconnected)
                )
            {
                break;
            }
        }
        let lines = self.lines.lock();
        if lines.is_empty() {
            return reason;
        }
        let quoted: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("{reason}; its last stderr lines: {}", quoted.join(" | "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_redacted_and_cut() {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        drop(tx);
        let secret = "sk-live-0123456789".to_owned();
        let short = "1".to_owned();
        let t = StderrTail::new([&secret, &short], rx);
        assert_eq!(t.explain("gone".into()), "gone");
        for i in 0..10 {
            t.push(&format!("line {i} key={secret}"));
        }
        t.push("   ");
        t.push(&"x".repeat(1000));
        let e = t.explain("gone".into());
        assert!(!e.contains(&secret), "{e}");
        assert!(e.contains("line 9 key=<redacted>"), "{e}");
        assert!(!e.contains("line 5 "), "{e}");
        assert!(
            e.contains(&format!("{}…", "x".repeat(TAIL_LINE_CHARS))),
            "{e}"
        );
        assert!(e.len() < TAIL_LINES * (TAIL_LINE_CHARS + 8) + 64, "{e}");
        // A short env value is left alone.
        assert!(e.contains("line 6"), "{e}");
    }
}
