//! The media file-name check and `MediaStore::read` on arbitrary names: a
//! name that passes the check is flat (no separator, no `..`, no NUL), and
//! `read` never returns a file outside the media directory.
#![no_main]
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skald_mcp::manager::{is_media_file_name, MediaStore};

/// A media directory with one valid file, beside a secret file in its parent.
fn store() -> &'static (MediaStore, PathBuf) {
    static S: OnceLock<(MediaStore, PathBuf)> = OnceLock::new();
    S.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("skald-fuzz-media-{}", std::process::id()));
        let media = root.join("media");
        std::fs::create_dir_all(&media).unwrap();
        std::fs::write(root.join("secret.txt"), b"SECRET").unwrap();
        std::fs::write(media.join("0123abcd.png"), b"PNG").unwrap();
        (MediaStore::new(&media, "/media"), root)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let ok = is_media_file_name(name);
    if ok {
        assert!(!name.contains('/') && !name.contains('\\') && !name.contains('\0'));
        assert!(!name.contains(".."));
        assert!(!name.starts_with('.'));
        assert_eq!(name.matches('.').count(), 1);
    }
    let (media, _) = store();
    match media.read(name) {
        Ok((bytes, _)) => {
            assert!(ok, "read accepted a name the check refuses: {name:?}");
            assert_eq!(bytes, b"PNG");
        }
        Err(_) => {}
    }
});
