//! The little URL handling OAuth needs, without a URL crate: origin and
//! path, query building and parsing, percent-encoding.

/// `(origin, path)` of an absolute http(s) URL: `https://h:1/a/b?q` →
/// `("https://h:1", "/a/b")`. The query and fragment are dropped.
pub(crate) fn split(url: &str) -> Option<(String, String)> {
    let scheme_end = url.find("://")?;
    let scheme = &url[..scheme_end];
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let rest = &url[scheme_end + 3..];
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return None;
    }
    Some((
        format!("{}://{authority}", scheme.to_ascii_lowercase()),
        path.to_owned(),
    ))
}

/// The canonical resource URI of an MCP server (RFC 8707 / MCP spec):
/// lower-case scheme and host, no fragment, no query, no trailing slash.
pub(crate) fn canonical_resource(url: &str) -> String {
    match split(url) {
        Some((origin, path)) => {
            let (scheme, host) = origin.split_once("://").unwrap_or(("https", &origin));
            let path = path.trim_end_matches('/');
            format!("{scheme}://{}{path}", host.to_ascii_lowercase())
        }
        None => url.to_owned(),
    }
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Percent-encodes everything but unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if unreserved(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes percent-encoding and `+` (as in form bodies and queries).
/// A `%` not followed by two hex digits is kept as is.
pub(crate) fn decode(s: &str) -> String {
    fn hex(c: u8) -> Option<u8> {
        (c as char).to_digit(16).map(|d| d as u8)
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k=v&k2=v2`, percent-encoded.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of a URL, decoded.
pub(crate) fn query_params(url: &str) -> Vec<(String, String)> {
    let q = match url.split_once('?') {
        Some((_, q)) => q.split('#').next().unwrap_or(""),
        None => return Vec::new(),
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// Appends query parameters to a URL that may already have some.
pub(crate) fn with_query(url: &str, pairs: &[(&str, &str)]) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{}", form(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitting() {
        assert_eq!(
            split("https://a.b:8/x/y?q=1#f"),
            Some(("https://a.b:8".into(), "/x/y".into()))
        );
        assert_eq!(split("HTTP://h"), Some(("http://h".into(), "".into())));
        assert_eq!(split("ftp://h/x"), None);
        assert_eq!(split("https:///x"), None);
        assert_eq!(
            canonical_resource("HTTPS://Example.COM/mcp/"),
            "https://example.com/mcp"
        );
    }

    #[test]
    fn encoding() {
        assert_eq!(encode("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(decode("a%20b+c%2F%zz%"), "a b c/%zz%");
        assert_eq!(decode(&encode("ü &=x")), "ü &=x");
        let q = query_params("http://l/cb?code=ab%2Bc&state=s+1&empty");
        assert_eq!(
            q,
            vec![
                ("code".into(), "ab+c".into()),
                ("state".into(), "s 1".into()),
                ("empty".into(), "".into())
            ]
        );
        assert_eq!(
            with_query("http://x/a?b=1", &[("c", "d e")]),
            "http://x/a?b=1&c=d%20e"
        );
    }
}
