//! The checks that keep one authorization server from passing itself off
//! as another (the mix-up attack) and keep codes and tokens off plain HTTP:
//! the metadata's `issuer` (RFC 8414 §3.3), the authorization response's
//! `iss` (RFC 9207 §2.4), and https for every endpoint that is not loopback.
//!
//! Each check is a pure function returning an [`AuthRefusal`], so the rules
//! are unit-tested without a server and never panic on what a server sent.

use crate::error::AuthRefusal;

/// RFC 8414 §3.3: the metadata fetched from `url` for issuer `expected`
/// must declare exactly that issuer. Simple string comparison: a trailing
/// slash or a case difference is a different issuer.
pub(super) fn check_metadata_issuer(
    expected: &str,
    found: Option<&str>,
    url: &str,
) -> Result<(), AuthRefusal> {
    if found == Some(expected) {
        return Ok(());
    }
    Err(AuthRefusal::MetadataIssuerMismatch {
        expected: expected.to_owned(),
        found: found.map(str::to_owned),
        url: url.to_owned(),
    })
}

/// The 2025-03-26 fallback (no protected resource metadata): the metadata
/// URL is built from the MCP server's origin, not from an issuer
/// identifier, and servers of that revision commonly declare an issuer
/// under a path of it (`https://h/oauth`). What RFC 8414 §3.3 guards
/// against, a document impersonating another server, is a foreign issuer:
/// so the declared issuer must be the origin or lie under it, and anything
/// else (another host, port or scheme, or none) is refused.
pub(super) fn check_legacy_metadata_issuer(
    origin: &str,
    found: Option<&str>,
    url: &str,
) -> Result<(), AuthRefusal> {
    let same_origin = found.is_some_and(|f| {
        f == origin
            || f.strip_prefix(origin)
                .is_some_and(|rest| rest.starts_with('/'))
    });
    if same_origin {
        return Ok(());
    }
    Err(AuthRefusal::MetadataIssuerMismatch {
        expected: origin.to_owned(),
        found: found.map(str::to_owned),
        url: url.to_owned(),
    })
}

/// RFC 9207 §2.4 as MCP 2026-07-28 tabulates it: a present `iss` is
/// compared with the recorded issuer whether or not the server advertises
/// it (no normalization of any kind); an absent one is refused only when
/// the server advertises `authorization_response_iss_parameter_supported`.
pub(super) fn check_response_issuer(
    recorded: &str,
    advertised: bool,
    iss: Option<&str>,
) -> Result<(), AuthRefusal> {
    match iss {
        Some(i) if i == recorded => Ok(()),
        Some(i) => Err(AuthRefusal::ResponseIssuerMismatch {
            expected: recorded.to_owned(),
            found: i.to_owned(),
        }),
        None if advertised => Err(AuthRefusal::ResponseIssuerMissing {
            expected: recorded.to_owned(),
        }),
        None => Ok(()),
    }
}

/// True when `url` is `http://` to a loopback host (`localhost`,
/// `127.0.0.0/8`, `[::1]`), where plain HTTP never leaves the machine.
pub(crate) fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url
        .get(..7)
        .filter(|s| s.eq_ignore_ascii_case("http://"))
        .map(|_| &url[7..])
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Userinfo before '@' could otherwise make "http://localhost@evil" pass.
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, _)) => h,
            None => return false,
        }
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.eq_ignore_ascii_case("localhost") || host == "::1" {
        return true;
    }
    let octets: Vec<&str> = host.split('.').collect();
    octets.len() == 4 && octets[0] == "127" && octets.iter().all(|o| o.parse::<u8>().is_ok())
}

/// `url` must be https, or http to a loopback address; anything else (a
/// plain-http remote host, another scheme, garbage) is refused, naming
/// `what` so the user knows which setting or server to fix.
pub(super) fn check_secure(what: &str, url: &str) -> Result<(), AuthRefusal> {
    let https = url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    if https || is_loopback_http(url) {
        return Ok(());
    }
    Err(AuthRefusal::InsecureEndpoint {
        what: what.to_owned(),
        url: url.to_owned(),
    })
}

/// The redirect URI may also be a private-use scheme (`com.example.app:/cb`,
/// RFC 8252 §7.1) for native apps; only plain http to a remote host, which
/// would hand the code to anyone on the path, is refused.
pub(super) fn check_redirect_uri(url: &str) -> Result<(), AuthRefusal> {
    let http = url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"));
    if http && !is_loopback_http(url) {
        return Err(AuthRefusal::InsecureEndpoint {
            what: "redirect URI".to_owned(),
            url: url.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_issuer_is_compared_exactly() {
        let ok = "https://auth.example";
        assert!(check_metadata_issuer(ok, Some(ok), "u").is_ok());
        for bad in [
            Some("https://attacker.example"),
            Some("https://auth.example/"),
            Some("HTTPS://auth.example"),
            Some("https://AUTH.example"),
            Some("https://auth.example:443"),
            None,
        ] {
            let e =
                check_metadata_issuer(ok, bad, "https://auth.example/.well-known/x").unwrap_err();
            let text = e.to_string();
            assert!(text.contains(ok), "{text}");
            if let Some(b) = bad {
                assert!(text.contains(b), "{text}");
            }
        }
    }

    #[test]
    fn legacy_metadata_issuer_stays_on_the_servers_origin() {
        let o = "http://localhost:3000";
        for ok in [
            o,
            "http://localhost:3000/oauth",
            "http://localhost:3000/a/b",
        ] {
            assert!(
                check_legacy_metadata_issuer(o, Some(ok), "u").is_ok(),
                "{ok}"
            );
        }
        for bad in [
            Some("http://localhost:30001"),
            Some("http://localhost:3000.evil.example"),
            Some("http://localhost:3000@evil.example"),
            Some("https://localhost:3000"),
            Some("http://attacker.example"),
            None,
        ] {
            assert!(
                matches!(
                    check_legacy_metadata_issuer(o, bad, "u"),
                    Err(AuthRefusal::MetadataIssuerMismatch { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn response_issuer_follows_the_rfc_9207_table() {
        let rec = "http://localhost:3000";
        // Advertised: present and equal proceeds, absent is refused.
        assert!(check_response_issuer(rec, true, Some(rec)).is_ok());
        assert_eq!(
            check_response_issuer(rec, true, None),
            Err(AuthRefusal::ResponseIssuerMissing {
                expected: rec.into()
            })
        );
        // Not advertised: absent proceeds, present is still compared.
        assert!(check_response_issuer(rec, false, None).is_ok());
        assert!(check_response_issuer(rec, false, Some(rec)).is_ok());
        assert!(matches!(
            check_response_issuer(rec, false, Some("https://evil.example.com")),
            Err(AuthRefusal::ResponseIssuerMismatch { .. })
        ));
        // No normalization: trailing slash, case, default port, encoding.
        for variant in [
            "http://localhost:3000/",
            "HTTP://localhost:3000",
            "http://LOCALHOST:3000",
            "http://localhost%3A3000",
            "",
        ] {
            assert!(
                check_response_issuer(rec, true, Some(variant)).is_err(),
                "{variant:?} accepted"
            );
        }
        assert!(
            check_response_issuer("https://a.example", true, Some("https://a.example:443"))
                .is_err()
        );
    }

    #[test]
    fn only_loopback_may_use_plain_http() {
        for ok in [
            "https://auth.example/token",
            "HTTPS://auth.example",
            "http://localhost:3000/token",
            "http://LocalHost/x",
            "http://127.0.0.1:8080",
            "http://127.10.0.3/",
            "http://[::1]:9/x",
        ] {
            assert!(check_secure("token endpoint", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example/token",
            "http://localhost.evil.example/",
            "http://localhost@evil.example/",
            "http://127.0.0.1.evil.example/",
            "http://128.0.0.1/",
            "http://[::2]/",
            "http://[::1",
            "ftp://auth.example",
            "auth.example/token",
            "",
            "http://",
        ] {
            let e = check_secure("token endpoint", bad).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("https") && text.contains("token endpoint"),
                "{text}"
            );
        }
    }

    #[test]
    fn redirect_uris() {
        assert!(check_redirect_uri("http://127.0.0.1:33418/callback").is_ok());
        assert!(check_redirect_uri("https://app.example/cb").is_ok());
        assert!(check_redirect_uri("com.example.app:/callback").is_ok());
        assert!(check_redirect_uri("http://app.example/cb").is_err());
    }
}
