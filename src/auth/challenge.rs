//! `WWW-Authenticate` parsing (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9449
//! §7.1): the Bearer (or DPoP) challenge's `resource_metadata`, `scope`
//! and `error`.

use std::collections::HashMap;

/// The parameters of a `Bearer` challenge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// RFC 9728 `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the resource needs.
    pub scope: Option<String>,
    /// e.g. `invalid_token`, `insufficient_scope`.
    pub error: Option<String>,
    /// Every parameter, lower-cased names.
    pub params: HashMap<String, String>,
}

/// Parses a `WWW-Authenticate` value and returns its Bearer challenge, if
/// any. Tolerant of odd spacing, other schemes beside it, and unquoted values.
pub fn parse_bearer(header: &str) -> Option<BearerChallenge> {
    parse_scheme(header, "bearer")
}

/// The `DPoP` challenge of a `WWW-Authenticate` value (RFC 9449 §7.1: the
/// same parameters as Bearer, e.g. `error="use_dpop_nonce"`).
pub fn parse_dpop(header: &str) -> Option<BearerChallenge> {
    parse_scheme(header, "dpop")
}

/// The challenge of auth scheme `scheme` (lower case).
fn parse_scheme(header: &str, scheme: &str) -> Option<BearerChallenge> {
    let b = header.as_bytes();
    let mut i = 0;
    let mut current_scheme: Option<String> = None;
    let mut bearer: Option<HashMap<String, String>> = None;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t' || b[*i] == b',') {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && !matches!(b[i], b' ' | b'\t' | b',' | b'=') {
            i += 1;
        }
        if i == start {
            // A stray '=' (or other separator) with no token: skip it, or
            // the loop would never advance.
            i += 1;
            continue;
        }
        let token = &header[start..i];
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' && !token.is_empty() {
            // An auth-param of the current challenge.
            i = j + 1;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = Vec::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    v.push(b[i]);
                    i += 1;
                }
                i += 1; // closing quote
                String::from_utf8_lossy(&v).into_owned()
            } else {
                let s = i;
                while i < b.len() && b[i] != b',' {
                    i += 1;
                }
                header[s..i].trim().to_owned()
            };
            if current_scheme
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
            {
                if let Some(m) = bearer.as_mut() {
                    m.insert(token.to_ascii_lowercase(), value);
                }
            }
        } else {
            // A new scheme (or a token68, which Bearer does not use here).
            if token.eq_ignore_ascii_case(scheme) && bearer.is_none() {
                bearer = Some(HashMap::new());
            }
            current_scheme = Some(token.to_owned());
        }
    }
    let params = bearer?;
    Some(BearerChallenge {
        resource_metadata: params.get("resource_metadata").cloned(),
        scope: params.get("scope").cloned(),
        error: params.get("error").cloned(),
        params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_params() {
        let c = parse_bearer(r#"Bearer realm="mcp", resource_metadata="https://h/.well-known/oauth-protected-resource", scope="read write""#).unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://h/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope.as_deref(), Some("read write"));
        let c = parse_bearer(r#"Basic realm="x", Bearer error="insufficient_scope", scope="admin", error_description="needs \"admin\"""#).unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.params["error_description"], "needs \"admin\"");
        let c = parse_bearer("bearer scope=a").unwrap();
        assert_eq!(c.scope.as_deref(), Some("a"));
        assert_eq!(parse_bearer("Bearer"), Some(BearerChallenge::default()));
        assert!(parse_bearer(r#"Basic realm="x""#).is_none());
        let d = parse_dpop(
            r#"Bearer scope="a", DPoP error="use_dpop_nonce", resource_metadata="https://h/prm""#,
        )
        .unwrap();
        assert_eq!(d.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(d.resource_metadata.as_deref(), Some("https://h/prm"));
        assert_eq!(
            d.scope, None,
            "the Bearer challenge's scope is not the DPoP one's"
        );
        assert!(parse_dpop("Bearer scope=a").is_none());
        assert!(parse_bearer("").is_none());
        // Garbage never panics.
        for g in [
            "=",
            "Bearer =",
            "Bearer a=\"unterminated",
            ",,,",
            "Bearer a=b=c",
        ] {
            let _ = parse_bearer(g);
        }
    }
}
