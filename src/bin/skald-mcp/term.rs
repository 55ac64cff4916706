//! The terminal: progress lines on stderr, and elicitation prompts on
//! /dev/tty with masked input for secret fields.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;

use serde_json::{Map, Value};
use skald_mcp::{
    ElicitationForm, ElicitationHandler, ElicitationMode, ElicitationRequest, ElicitationResponse,
    FieldKind, FormField, Progress,
};

/// `s` with every control character but newline and tab written as
/// `\u{..}` (ESC, BEL, NUL, DEL and the C1 controls included): for text a
/// server controls, before it reaches the terminal.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether stderr is a terminal.
pub fn stderr_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(2) == 1 }
}

/// Draws `p` as one line on stderr (overwritten by the next).
pub fn draw_progress(p: &Progress) {
    let amount = match p.total {
        Some(t) if t > 0.0 => format!("{}/{} ({:.0}%)", p.progress, t, 100.0 * p.progress / t),
        _ => format!("{}", p.progress),
    };
    let msg = clean(p.message.as_deref().unwrap_or(""));
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[2K[progress] {amount} {msg}");
    let _ = e.flush();
}

/// Clears the progress line.
pub fn clear_progress() {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[2K");
    let _ = e.flush();
}

/// Echo off on a terminal until dropped.
struct NoEcho {
    fd: i32,
    saved: libc::termios,
}

impl NoEcho {
    fn new(f: &File) -> Option<NoEcho> {
        let fd = f.as_raw_fd();
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !libc::ECHO;
        t.c_lflag |= libc::ECHONL;
        // SAFETY: fd is an open terminal; t is a valid termios.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } != 0 {
            return None;
        }
        Some(NoEcho { fd, saved })
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        // SAFETY: restoring the attributes read in new().
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}

/// Answers elicitations by asking on /dev/tty. Without a terminal, every
/// request is answered `cancel`.
pub struct TerminalElicitation;

fn open_tty() -> Option<(File, BufReader<File>)> {
    let w = OpenOptions::new().write(true).open("/dev/tty").ok()?;
    let r = OpenOptions::new().read(true).open("/dev/tty").ok()?;
    Some((w, BufReader::new(r)))
}

fn read_line(r: &mut BufReader<File>) -> Option<String> {
    let mut s = String::new();
    match r.read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

fn ask_field(w: &mut File, r: &mut BufReader<File>, f: &FormField) -> Result<Option<Value>, ()> {
    for _ in 0..3 {
        let label = f.title.as_deref().unwrap_or(&f.name);
        let mut prompt = label.to_owned();
        if let Some(d) = &f.description {
            prompt.push_str(&format!(" ({d})"));
        }
        if let FieldKind::Enum { options, multiple } = &f.kind {
            let list: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, (_, t))| format!("{}={t}", i + 1))
                .collect();
            prompt.push_str(&format!(
                " [{}{}]",
                list.join(", "),
                if *multiple { "; comma-separated" } else { "" }
            ));
        }
        if let Some(d) = &f.default {
            prompt.push_str(&format!(" (default {d})"));
        }
        // Echo goes off before the prompt is shown, so nothing typed ahead
        // of it is echoed either.
        let guard = if f.secret { NoEcho::new(w) } else { None };
        let _ = write!(
            w,
            "{}{}: ",
            clean(&prompt),
            if f.required { " *" } else { "" }
        );
        let _ = w.flush();
        let line = read_line(r);
        drop(guard);
        let Some(line) = line else { return Err(()) };
        if line.is_empty() {
            if f.required && f.default.is_none() {
                let _ = writeln!(w, "a value is required");
                continue;
            }
            return Ok(None);
        }
        let parsed = match &f.kind {
            FieldKind::String { .. } => Some(Value::String(line)),
            FieldKind::Number { integer: true, .. } => line.parse::<i64>().ok().map(Value::from),
            FieldKind::Number { .. } => line.parse::<f64>().ok().map(Value::from),
            FieldKind::Boolean => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Some(Value::Bool(true)),
                "n" | "no" | "false" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            FieldKind::Enum { options, multiple } => {
                let pick = |s: &str| -> Option<String> {
                    let s = s.trim();
                    if let Ok(i) = s.parse::<usize>() {
                        return options.get(i.wrapping_sub(1)).map(|o| o.0.clone());
                    }
                    options
                        .iter()
                        .find(|o| o.0 == s || o.1 == s)
                        .map(|o| o.0.clone())
                };
                if *multiple {
                    line.split(',')
                        .map(pick)
                        .collect::<Option<Vec<_>>>()
                        .map(Value::from)
                } else {
                    pick(&line).map(Value::String)
                }
            }
        };
        match parsed {
            Some(v) => return Ok(Some(v)),
            None => {
                let _ = writeln!(w, "not a valid value, try again");
            }
        }
    }
    Err(())
}

impl ElicitationHandler for TerminalElicitation {
    fn elicit(&self, req: &ElicitationRequest) -> ElicitationResponse {
        let Some((mut w, mut r)) = open_tty() else {
            return ElicitationResponse::Cancel;
        };
        clear_progress();
        let _ = writeln!(w, "\n[{}] {}", req.server, clean(&req.message));
        if let ElicitationMode::Url { url, .. } = &req.mode {
            let _ = writeln!(w, "Open this URL to continue: {}", clean(url));
        }
        match &req.form {
            ElicitationForm::Confirm => {
                let _ = write!(w, "Proceed? [y/N/c=cancel] ");
                let _ = w.flush();
                match read_line(&mut r)
                    .as_deref()
                    .map(str::to_ascii_lowercase)
                    .as_deref()
                {
                    Some("y" | "yes") => ElicitationResponse::Accept(Map::new()),
                    Some("c" | "cancel") | None => ElicitationResponse::Cancel,
                    Some(_) => ElicitationResponse::Decline,
                }
            }
            ElicitationForm::Fields(fields) => {
                let _ = writeln!(
                    w,
                    "(an empty answer to the first field declines; Ctrl+D cancels)"
                );
                let mut content = Map::new();
                for (i, f) in fields.iter().enumerate() {
                    match ask_field(&mut w, &mut r, f) {
                        Ok(Some(v)) => {
                            content.insert(f.name.clone(), v);
                        }
                        Ok(None)
                            if i == 0
                                && fields.iter().all(|f| !f.required)
                                && fields.len() == 1 =>
                        {
                            return ElicitationResponse::Decline
                        }
                        Ok(None) => {}
                        Err(()) => return ElicitationResponse::Cancel,
                    }
                }
                ElicitationResponse::Accept(content)
            }
        }
    }

    fn supports_url(&self) -> bool {
        true
    }
}
