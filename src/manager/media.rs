//! Media results saved to disk and referenced by URL, so the bytes never
//! enter the model's context: a tool that returns an image gives the model
//! `![image](/api/mcp-media/<id>.png) (image/png, 412 KB)`.
//!
//! Files are flat `<id>.<ext>` names in one directory. [`MediaStore::read`]
//! accepts only such names and only regular files, so a request for
//! `../x`, an absolute path or a symlink is refused.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{McpError, Result};
use crate::manager::ToolResult;
use crate::result::{McpCallResult, McpMedia, ResourceData};

/// The URL prefix under which a host serves [`MediaStore::read`].
pub const MEDIA_URL_PREFIX: &str = "/api/mcp-media";

/// The largest media file [`MediaStore::read`] returns.
pub const MAX_MEDIA_FILE: u64 = crate::limits::MAX_MESSAGE_SIZE as u64;

/// The file extension for a MIME type (`bin` when unknown).
pub fn ext_for_mime(mime: &str) -> &'static str {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match base.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "audio/webm" => "weba",
        "video/mp4" => "mp4",
        "video/webm" => "webm",
        "application/pdf" => "pdf",
        "application/json" => "json",
        "application/zip" => "zip",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        _ => "bin",
    }
}

/// The `Content-Type` to serve a file extension with.
pub fn content_type_for_ext(ext: &str) -> &'static str {
    match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        "weba" => "audio/webm",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "pdf" => "application/pdf",
        "json" => "application/json",
        "zip" => "application/zip",
        "txt" => "text/plain; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Whether `name` is a flat media file name: `<id>.<ext>` with an id of 1 to
/// 64 characters from `[0-9a-f-]` and an extension of 1 to 8 from `[a-z0-9]`.
pub fn is_media_file_name(name: &str) -> bool {
    let Some((id, ext)) = name.split_once('.') else {
        return false;
    };
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-')
        && (1..=8).contains(&ext.len())
        && ext
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn human_size(n: usize) -> String {
    const K: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        // "1 KB" for 108 bytes would overstate a small file nine times.
        format!("{n} B")
    } else if f < K * K {
        format!("{} KB", ((f / K).round() as u64).max(1))
    } else {
        format!("{:.1} MB", f / (K * K))
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh id: 16 random hex digits and a per-process counter.
fn new_id() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(std::process::id() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    h.write_u64(n);
    format!("{:016x}-{n:x}", h.finish())
}

/// Where media is written and how it is referenced.
#[derive(Debug, Clone)]
pub struct MediaStore {
    dir: PathBuf,
    url_prefix: String,
}

impl MediaStore {
    /// Media in `dir` (created on first write), referenced as
    /// `<url_prefix>/<id>.<ext>`.
    pub fn new(dir: impl Into<PathBuf>, url_prefix: impl Into<String>) -> MediaStore {
        MediaStore {
            dir: dir.into(),
            url_prefix: url_prefix.into().trim_end_matches('/').to_owned(),
        }
    }

    /// The directory the files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write(&self, ext: &str, bytes: &[u8]) -> Result<String> {
        let io = |context: String| move |source| McpError::Io { context, source };
        std::fs::create_dir_all(&self.dir).map_err(io(format!(
            "creating media directory {}",
            self.dir.display()
        )))?;
        let name = format!("{}.{ext}", new_id());
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let path = self.dir.join(&name);
        let mut f =
            std::fs::File::create(&tmp).map_err(io(format!("writing {}", tmp.display())))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(io(format!("writing {}", tmp.display())))?;
        std::fs::rename(&tmp, &path).map_err(io(format!("renaming {}", tmp.display())))?;
        Ok(name)
    }

    /// Maps a call result to a [`ToolResult`], writing each inline media
    /// item to a file and returning markdown that references it.
    pub fn persist(&self, result: McpCallResult) -> Result<ToolResult> {
        let (text, structured, items) = match result {
            McpCallResult::Text(t) => return Ok(ToolResult::Text(t)),
            McpCallResult::Json { value, .. } => return Ok(ToolResult::Json(value)),
            McpCallResult::Media {
                text,
                structured,
                items,
            } => (text, structured, items),
            other => return Ok(ToolResult::Text(other.to_text())),
        };
        let mut lines: Vec<String> = Vec::new();
        if !text.is_empty() {
            lines.push(text);
        }
        if let Some(s) = structured {
            lines.push(s.to_string());
        }
        for item in &items {
            let line = match item {
                McpMedia::ResourceLink { uri, mime_type, .. } => {
                    link_line(mime_type.as_deref().unwrap_or("resource"), uri)
                }
                McpMedia::Image { mime_type, data } => {
                    self.reference("!", "image", mime_type, data)?
                }
                McpMedia::Audio { mime_type, data } => {
                    self.reference("", "audio", mime_type, data)?
                }
                McpMedia::Resource {
                    mime_type, data, ..
                } => {
                    let default = match data {
                        ResourceData::Text(_) => "text/plain",
                        ResourceData::Blob(_) => "application/octet-stream",
                    };
                    let mime = mime_type.as_deref().unwrap_or(default);
                    self.reference("", "file", mime, item.bytes().unwrap_or_default())?
                }
            };
            lines.push(line);
        }
        Ok(ToolResult::Text(lines.join("\n")))
    }

    fn reference(&self, bang: &str, label: &str, mime: &str, data: &[u8]) -> Result<String> {
        let name = self.write(ext_for_mime(mime), data)?;
        Ok(format!(
            "{bang}[{label}]({}/{name}) ({}, {})",
            self.url_prefix,
            safe_mime(mime),
            human_size(data.len())
        ))
    }

    /// Reads a saved file by its flat name; returns the bytes and the
    /// content type. Anything but a regular file with a valid name is refused.
    pub fn read(&self, file: &str) -> Result<(Vec<u8>, &'static str)> {
        let refuse = |why: &str| McpError::InvalidInput {
            server: "media".into(),
            message: format!("media file {file:?} refused: {why}"),
        };
        if !is_media_file_name(file) {
            return Err(refuse("not a flat <id>.<ext> name"));
        }
        let path = self.dir.join(file);
        let meta = std::fs::symlink_metadata(&path).map_err(|source| McpError::Io {
            context: format!("reading media file {file}"),
            source,
        })?;
        if !meta.file_type().is_file() {
            return Err(refuse("not a regular file"));
        }
        if meta.len() > MAX_MEDIA_FILE {
            return Err(refuse("too large"));
        }
        let bytes = std::fs::read(&path).map_err(|source| McpError::Io {
            context: format!("reading media file {file}"),
            source,
        })?;
        let ext = file.rsplit('.').next().unwrap_or("");
        Ok((bytes, content_type_for_ext(ext)))
    }
}

/// Longest media type written into a markdown line.
const MAX_MIME_IN_LINE: usize = 100;

/// A server's media type as it may appear in a markdown line: only the
/// characters a media type has (`type/subtype; param=value`), others
/// replaced by `_`, so a `mimeType` cannot close the line's parenthesis,
/// start a new line or smuggle a link.
fn safe_mime(mime: &str) -> String {
    mime.chars()
        .take(MAX_MIME_IN_LINE)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "/+.-_;= ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The markdown line of a `resource_link`: a link only for `http`/`https`
/// URIs made of characters that cannot break out of it; anything else
/// (`javascript:`, `data:`, `file:`, a `](` inside) is shown as code, never
/// as something a renderer would follow.
fn link_line(mime: &str, uri: &str) -> String {
    let label = safe_mime(mime);
    let lower = uri.to_ascii_lowercase();
    let linkable = (lower.starts_with("https://") || lower.starts_with("http://"))
        && uri
            .chars()
            .all(|c| c.is_ascii_graphic() && !"()[]<>`\\\"'".contains(c));
    if linkable {
        format!("[{label}]({uri})")
    } else {
        let shown: String = uri
            .chars()
            .map(|c| if c == '`' || c.is_control() { '_' } else { c })
            .collect();
        format!("{label}: `{shown}`")
    }
}

#[cfg(test)]
mod hostile_lines {
    use super::*;

    #[test]
    fn server_text_cannot_break_a_markdown_line() {
        assert_eq!(safe_mime("image/png"), "image/png");
        assert_eq!(
            safe_mime("text/plain; charset=utf-8"),
            "text/plain; charset=utf-8"
        );
        let m = safe_mime("image/png) ![x](https://evil/beacon.png\n");
        assert!(
            !m.contains(')') && !m.contains('(') && !m.contains('\n') && !m.contains('!'),
            "{m}"
        );
        assert_eq!(safe_mime(&"a".repeat(500)).len(), MAX_MIME_IN_LINE);

        assert_eq!(
            link_line("text/html", "https://x/y"),
            "[text/html](https://x/y)"
        );
        for uri in [
            "javascript:alert(1)",
            "JAVASCRIPT:alert(1)",
            "data:text/html,<script>",
            "file:///etc/passwd",
            "https://ok/](javascript:alert(1))",
            "https://a b",
            "https://x/`y`",
        ] {
            let l = link_line("text/html", uri);
            // Shown as inline code (where markdown follows no link).
            assert!(!l.starts_with('['), "{uri} became a link: {l}");
            assert!(l.starts_with("text/html: `"), "{l}");
            assert_eq!(l.matches('`').count(), 2, "{l}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "skald-media-{tag}-{}-{}",
            std::process::id(),
            new_id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn names() {
        assert!(is_media_file_name("0a1b-2.png"));
        for bad in [
            "../x",
            "/etc/passwd",
            "a.png/..",
            "x",
            ".png",
            "a.",
            "A.png",
            "a.PNG",
            "a.b.c",
            "a\0.png",
            "a b.png",
            "g.png",
        ] {
            assert!(!is_media_file_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn mime_mapping() {
        assert_eq!(ext_for_mime("image/png"), "png");
        assert_eq!(ext_for_mime("IMAGE/JPEG; q=1"), "jpg");
        assert_eq!(ext_for_mime("x/unknown"), "bin");
        assert_eq!(content_type_for_ext("png"), "image/png");
        assert_eq!(content_type_for_ext("bin"), "application/octet-stream");
        for m in ["image/png", "audio/wav", "application/pdf", "text/plain"] {
            assert!(content_type_for_ext(ext_for_mime(m)).starts_with(m));
        }
    }

    #[test]
    fn sizes_read_as_a_person_would() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(108), "108 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1 KB");
        assert_eq!(human_size(412 * 1024 + 100), "412 KB");
        assert_eq!(human_size(3 * 1024 * 1024 / 2), "1.5 MB");
    }

    #[test]
    fn persist_and_read_back() {
        let dir = tmp("persist");
        let store = MediaStore::new(&dir, MEDIA_URL_PREFIX);
        let png = vec![0x89, b'P', b'N', b'G', 1, 2, 3];
        let r = store
            .persist(McpCallResult::Media {
                text: "here".into(),
                structured: None,
                items: vec![
                    McpMedia::Image {
                        mime_type: "image/png".into(),
                        data: png.clone(),
                    },
                    McpMedia::ResourceLink {
                        uri: "https://x/y".into(),
                        name: None,
                        mime_type: Some("text/html".into()),
                        description: None,
                    },
                ],
            })
            .unwrap();
        let ToolResult::Text(md) = r else { panic!() };
        let mut lines = md.lines();
        assert_eq!(lines.next(), Some("here"));
        let img = lines.next().unwrap();
        assert!(
            img.starts_with("![image](/api/mcp-media/") && img.ends_with(".png) (image/png, 7 B)"),
            "{img}"
        );
        assert_eq!(lines.next(), Some("[text/html](https://x/y)"));
        let file = img
            .split("/api/mcp-media/")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let (bytes, ct) = store.read(file).unwrap();
        assert_eq!((bytes, ct), (png, "image/png"));
        assert!(store.read("../x").is_err());
        assert!(store.read("ffff.png").is_err()); // valid name, no such file
        std::os::unix::fs::symlink("/etc/hostname", dir.join("abc.txt")).unwrap();
        assert!(matches!(
            store.read("abc.txt"),
            Err(McpError::InvalidInput { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plain_results_pass_through() {
        let store = MediaStore::new(tmp("plain"), MEDIA_URL_PREFIX);
        assert_eq!(
            store.persist(McpCallResult::Text("t".into())).unwrap(),
            ToolResult::Text("t".into())
        );
        let j = serde_json::json!({"a": 1});
        assert_eq!(
            store
                .persist(McpCallResult::Json {
                    value: j.clone(),
                    text: j.to_string()
                })
                .unwrap(),
            ToolResult::Json(j)
        );
        assert!(!store.dir().exists(), "nothing written for plain results");
    }

    #[test]
    fn ids_are_unique() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
