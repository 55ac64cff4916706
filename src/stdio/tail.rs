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
use std::time::Duration;

use parking_lot::Mutex;

/// How many of the last stderr lines an error quotes.
pub(super) const TAIL_LINES: usize = 5;

/// How many characters of one stderr line an error quotes.
pub(super) const TAIL_LINE_CHARS: usize = 200;

/// Env values shorter than this are not redacted: they are too short to be
/// a credential (`1`, `true`, `info`) and common enough in ordinary text
/// that replacing them would garble the lines.
const MIN_SECRET_LEN: usize = 6;

/// How long the end of the connection goes on reading stderr for what the
/// exited server wrote last, before quoting it. The reading ends as soon
/// as stderr reaches end of file or the pipe is empty (a process the server
/// started may keep stderr open, but what the server itself wrote is all
/// there once it has exited); the bound only matters when that process
/// keeps writing.
pub(super) const STDERR_EOF_WAIT: Duration = Duration::from_millis(250);

/// The bounded tail of a server's stderr.
pub(super) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    secrets: Vec<String>,
}

impl StderrTail {
    /// A tail redacting `env_values`.
    pub(super) fn new<'a>(env_values: impl IntoIterator<Item = &'a String>) -> StderrTail {
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
        }
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

    /// `reason` followed by the last stderr lines (the I/O thread has read
    /// stderr to its end, or [`STDERR_EOF_WAIT`] long, before it asks).
    pub(super) fn explain(&self, reason: String) -> String {
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
        let secret = "sk-live-0123456789".to_owned();
        let short = "1".to_owned();
        let t = StderrTail::new([&secret, &short]);
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
