//! Per-server log files: `<root>/logs/mcp/<name>.log`.
//!
//! Pure helpers ([`sanitize_log_name`], [`format_log_line`]) and the
//! [`LogFiles`] writer the store thread owns. A file that a line would push
//! past the size limit is first rotated to `<name>.log.1`, replacing the
//! previous backup, so at most one backup exists and the line that caused
//! the rotation is the first line of the new file.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{McpError, Result};
use crate::limits::{LOG_TAG_WIDTH, MAX_LOG_NAME_LEN, MAX_OPEN_LOG_FILES};
use crate::log::McpLogLine;

use super::timestamp::push_utc_millis;

/// The directory under `root` that holds the per-server log files:
/// `<root>/logs/mcp`.
pub fn log_dir(root: &Path) -> PathBuf {
    root.join("logs").join("mcp")
}

/// The log file of `server` under `root`: `<root>/logs/mcp/<sanitized>.log`.
pub fn log_file_path(root: &Path, server: &str) -> PathBuf {
    log_dir(root).join(format!("{}.log", sanitize_log_name(server)))
}

/// Turns a server name into a safe file stem.
///
/// Every character outside `[A-Za-z0-9._-]` becomes `_` (one `_` per
/// character, whatever its UTF-8 length). The result never names a
/// directory or a hidden file: an empty name, or one starting with `.`
/// (such as `.` and `..`), gets a leading `_`. A result longer than
/// [`MAX_LOG_NAME_LEN`] is cut and ends in `-` and 16 hex digits of a stable
/// hash (FNV-1a) of the original name.
///
/// ```
/// use skald_mcp::store::sanitize_log_name;
/// assert_eq!(sanitize_log_name("gcal"), "gcal");
/// assert_eq!(sanitize_log_name("../../etc/x"), "_.._.._etc_x");
/// assert_eq!(sanitize_log_name(".."), "_..");
/// assert_eq!(sanitize_log_name(""), "_");
/// ```
pub fn sanitize_log_name(server: &str) -> String {
    let mut s: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    if s.len() > MAX_LOG_NAME_LEN {
        // `s` is ASCII only, so any byte index is a char boundary.
        s.truncate(MAX_LOG_NAME_LEN - 17);
        let _ = write!(s, "-{:016x}", fnv1a64(server.as_bytes()));
    }
    s
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Renders one log file line, including the trailing newline:
/// timestamp, the bracketed tag padded to [`LOG_TAG_WIDTH`], a space, the text.
///
/// Carriage returns and newlines inside the text are written as `\r` and
/// `\n`, so one record is always exactly one line.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use skald_mcp::store::format_log_line;
/// use skald_mcp::{LogLevel, LogTag, McpLogLine};
/// let at = UNIX_EPOCH + Duration::from_millis(1_783_082_096_789);
/// let line = |tag, text: &str| McpLogLine { server: "s".into(), tag, text: text.into(), at };
/// assert_eq!(
///     format_log_line(&line(LogTag::Stderr, "INFO: server ready")),
///     "2026-07-03T12:34:56.789Z [stderr]     INFO: server ready\n"
/// );
/// assert_eq!(
///     format_log_line(&line(LogTag::Level(LogLevel::Warning), "rate limit")),
///     "2026-07-03T12:34:56.789Z [warning]    rate limit\n"
/// );
/// assert_eq!(
///     format_log_line(&line(LogTag::Lifecycle, "failed to start")),
///     "2026-07-03T12:34:56.789Z [lifecycle]  failed to start\n"
/// );
/// ```
pub fn format_log_line(line: &McpLogLine) -> String {
    let tag = line.tag.as_str();
    let mut out = String::with_capacity(24 + LOG_TAG_WIDTH + line.text.len() + 3);
    push_utc_millis(&mut out, line.at);
    out.push_str(" [");
    out.push_str(tag);
    out.push(']');
    for _ in (tag.len() + 2)..LOG_TAG_WIDTH {
        out.push(' ');
    }
    out.push(' ');
    if line.text.contains(['\n', '\r']) {
        for c in line.text.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
    } else {
        out.push_str(&line.text);
    }
    out.push('\n');
    out
}

/// What happened when a line was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    /// The file was rotated before the line was written.
    pub rotated: bool,
}

struct OpenLog {
    path: PathBuf,
    writer: BufWriter<File>,
    size: u64,
}

/// The open log files, keyed by sanitized name. Owned by the store thread.
pub(crate) struct LogFiles {
    dir: PathBuf,
    max_bytes: u64,
    open: HashMap<String, OpenLog>,
}

fn io_err(context: String) -> impl FnOnce(std::io::Error) -> McpError {
    move |source| McpError::Io { context, source }
}

fn open_append(path: &Path) -> Result<OpenLog> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io_err(format!("opening log file {}", path.display())))?;
    let size = file
        .metadata()
        .map_err(io_err(format!("reading the size of {}", path.display())))?
        .len();
    Ok(OpenLog {
        path: path.to_path_buf(),
        writer: BufWriter::new(file),
        size,
    })
}

impl LogFiles {
    /// Creates `dir` (and its parents) and prepares to write files in it;
    /// `max_bytes` is the rotation size.
    pub(crate) fn new(dir: PathBuf, max_bytes: u64) -> Result<LogFiles> {
        fs::create_dir_all(&dir).map_err(io_err(format!(
            "creating the log directory {}",
            dir.display()
        )))?;
        Ok(LogFiles {
            dir,
            max_bytes,
            open: HashMap::new(),
        })
    }

    /// Appends `line` to its server's file (buffered; see [`LogFiles::flush`]),
    /// rotating first if the line would take the file past the limit.
    ///
    /// A line longer than the limit on its own is written whole to a fresh
    /// file. If the rotation's rename fails, the line is still appended to
    /// the current file and the failure is logged.
    pub(crate) fn write(&mut self, line: &McpLogLine) -> Result<Written> {
        let stem = sanitize_log_name(&line.server);
        if !self.open.contains_key(&stem) && self.open.len() >= MAX_OPEN_LOG_FILES {
            self.close()?;
        }
        let log = match self.open.entry(stem) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let path = self.dir.join(format!("{}.log", e.key()));
                e.insert(open_append(&path)?)
            }
        };
        let text = format_log_line(line);
        let len = text.len() as u64;
        let mut rotated = false;
        if log.size > 0 && log.size.saturating_add(len) > self.max_bytes {
            log.writer
                .flush()
                .map_err(io_err(format!("writing log file {}", log.path.display())))?;
            let mut backup = log.path.clone().into_os_string();
            backup.push(".1");
            match fs::rename(&log.path, &backup) {
                Ok(()) => match open_append(&log.path) {
                    Ok(fresh) => {
                        *log = fresh;
                        rotated = true;
                    }
                    Err(e) => {
                        // Do not keep appending to the renamed backup.
                        self.open.remove(&sanitize_log_name(&line.server));
                        return Err(e);
                    }
                },
                Err(e) => ::log::error!(
                    "store: cannot rotate log file {}: {e}; appending past the limit",
                    log.path.display()
                ),
            }
        }
        log.writer
            .write_all(text.as_bytes())
            .map_err(io_err(format!("writing log file {}", log.path.display())))?;
        log.size += len;
        Ok(Written { rotated })
    }

    /// Flushes every open file; the first error is returned, after all were tried.
    pub(crate) fn flush(&mut self) -> Result<()> {
        let mut first = Ok(());
        for log in self.open.values_mut() {
            if let Err(e) = log.writer.flush() {
                if first.is_ok() {
                    first = Err(McpError::Io {
                        context: format!("writing log file {}", log.path.display()),
                        source: e,
                    });
                }
            }
        }
        first
    }

    /// Flushes and closes every open file.
    pub(crate) fn close(&mut self) -> Result<()> {
        let result = self.flush();
        self.open.clear();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{LogLevel, LogTag};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, UNIX_EPOCH};

    struct TempDir(PathBuf);
    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "skald-logfile-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn line(server: &str, text: &str) -> McpLogLine {
        McpLogLine {
            server: server.into(),
            tag: LogTag::Stderr,
            text: text.into(),
            at: UNIX_EPOCH + Duration::from_millis(1_783_082_096_789),
        }
    }

    #[test]
    fn tags_align() {
        let mut columns = Vec::new();
        let levels = [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ];
        let tags = levels
            .into_iter()
            .map(LogTag::Level)
            .chain([LogTag::Stderr, LogTag::Lifecycle]);
        for tag in tags {
            let mut l = line("s", "TEXT");
            l.tag = tag;
            let s = format_log_line(&l);
            assert!(s.contains(&format!("[{}] ", tag.as_str())), "{s}");
            columns.push(s.find("TEXT").unwrap());
        }
        assert!(columns.iter().all(|&c| c == columns[0]), "{columns:?}");
        // Timestamp (24) + space + tag column + space.
        assert_eq!(columns[0], 24 + 1 + LOG_TAG_WIDTH + 1);
    }

    #[test]
    fn newlines_are_escaped() {
        let s = format_log_line(&line("s", "a\nb\r\nc"));
        assert!(s.ends_with(" a\\nb\\r\\nc\n"), "{s:?}");
        assert_eq!(s.matches('\n').count(), 1);
    }

    #[test]
    fn sanitize() {
        assert_eq!(sanitize_log_name("gcal-2.v_1"), "gcal-2.v_1");
        assert_eq!(sanitize_log_name("a b/c\\d"), "a_b_c_d");
        assert_eq!(sanitize_log_name("é"), "_");
        assert_eq!(sanitize_log_name("x\0y"), "x_y");
        assert_eq!(sanitize_log_name("."), "_.");
        assert_eq!(sanitize_log_name(".."), "_..");
        assert_eq!(sanitize_log_name(".hidden"), "_.hidden");
        assert_eq!(sanitize_log_name(""), "_");
        assert_eq!(sanitize_log_name("../../etc/x"), "_.._.._etc_x");
        let long_a = "a".repeat(300);
        let mut long_b = "a".repeat(299);
        long_b.push('b');
        let (sa, sb) = (sanitize_log_name(&long_a), sanitize_log_name(&long_b));
        assert_eq!(sa.len(), MAX_LOG_NAME_LEN);
        assert_eq!(sb.len(), MAX_LOG_NAME_LEN);
        assert_ne!(sa, sb, "long names sharing a prefix must not collide");
        assert_eq!(sa, sanitize_log_name(&long_a), "stable");
        // Exactly at the limit: kept as is.
        let edge = "e".repeat(MAX_LOG_NAME_LEN);
        assert_eq!(sanitize_log_name(&edge), edge);
    }

    fn read_lines(p: &Path) -> Vec<String> {
        fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn rotation_keeps_one_backup_and_every_line() {
        let tmp = TempDir::new();
        let one = format_log_line(&line("s", "L0000")).len() as u64;
        // Room for exactly 20 lines per file.
        let mut logs = LogFiles::new(tmp.0.clone(), 20 * one).unwrap();
        let mut rotations = Vec::new();
        for i in 0..30 {
            let w = logs.write(&line("s", &format!("L{i:04}"))).unwrap();
            if w.rotated {
                rotations.push(i);
            }
        }
        logs.flush().unwrap();
        assert_eq!(
            rotations,
            vec![20],
            "a file exactly at the limit is not past it"
        );
        let cur = tmp.0.join("s.log");
        let bak = tmp.0.join("s.log.1");
        let expect = |r: std::ops::Range<i32>| r.map(|i| format!("L{i:04}")).collect::<Vec<_>>();
        assert_eq!(read_lines(&bak), expect(0..20));
        assert_eq!(read_lines(&cur), expect(20..30));
        assert!(fs::metadata(&bak).unwrap().len() <= 20 * one);

        // A second rotation replaces the backup: still one, and the two files
        // together hold the most recent lines without a gap.
        for i in 30..45 {
            logs.write(&line("s", &format!("L{i:04}"))).unwrap();
        }
        logs.close().unwrap();
        assert_eq!(read_lines(&bak), expect(20..40));
        assert_eq!(read_lines(&cur), expect(40..45));
        let mut names: Vec<_> = fs::read_dir(&tmp.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["s.log", "s.log.1"]);
    }

    #[test]
    fn reopening_continues_the_size_count() {
        let tmp = TempDir::new();
        let one = format_log_line(&line("s", "L0000")).len() as u64;
        {
            let mut logs = LogFiles::new(tmp.0.clone(), 3 * one).unwrap();
            for i in 0..2 {
                logs.write(&line("s", &format!("L{i:04}"))).unwrap();
            }
            logs.close().unwrap();
        }
        let mut logs = LogFiles::new(tmp.0.clone(), 3 * one).unwrap();
        assert!(!logs.write(&line("s", "L0002")).unwrap().rotated);
        assert!(logs.write(&line("s", "L0003")).unwrap().rotated);
        logs.close().unwrap();
        assert_eq!(
            read_lines(&tmp.0.join("s.log.1")),
            ["L0000", "L0001", "L0002"]
        );
        assert_eq!(read_lines(&tmp.0.join("s.log")), ["L0003"]);
    }

    #[test]
    fn oversized_line_goes_to_a_fresh_file() {
        let tmp = TempDir::new();
        let mut logs = LogFiles::new(tmp.0.clone(), 100).unwrap();
        logs.write(&line("s", "short")).unwrap();
        let big = "x".repeat(500);
        assert!(logs.write(&line("s", &big)).unwrap().rotated);
        assert!(logs.write(&line("s", "after")).unwrap().rotated);
        logs.close().unwrap();
        assert_eq!(read_lines(&tmp.0.join("s.log.1")), [big]);
        assert_eq!(read_lines(&tmp.0.join("s.log")), ["after"]);
    }

    #[test]
    fn many_servers_stay_bounded_in_open_files() {
        let tmp = TempDir::new();
        let mut logs = LogFiles::new(tmp.0.clone(), 1 << 20).unwrap();
        for round in 0..2 {
            for s in 0..(MAX_OPEN_LOG_FILES * 2) {
                logs.write(&line(&format!("srv{s}"), &format!("r{round}")))
                    .unwrap();
                assert!(logs.open.len() <= MAX_OPEN_LOG_FILES);
            }
        }
        logs.close().unwrap();
        for s in 0..(MAX_OPEN_LOG_FILES * 2) {
            assert_eq!(read_lines(&tmp.0.join(format!("srv{s}.log"))), ["r0", "r1"]);
        }
    }
}
