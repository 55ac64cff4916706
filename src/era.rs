//! Which protocol era a server speaks, and how the client finds out.
//!
//! MCP 2026-07-28 ("modern") is stateless: no `initialize`, the protocol
//! version, client capabilities and identity travel in every request's
//! `_meta`, and servers answer `server/discover`. 2025-11-25 and older
//! ("legacy") open with the `initialize` handshake. A dual-era client tells
//! them apart as the specification's backward-compatibility sections say:
//!
//! * it probes with `server/discover`, its preferred modern version in
//!   `_meta`;
//! * a `DiscoverResult`, or a recognised modern error (such as
//!   `UnsupportedProtocolVersionError`), means modern: a mutually supported
//!   version is picked and `initialize` is never sent;
//! * any other error (whatever its code: legacy servers answer unknown
//!   methods with `-32601`, `-32602`, `-32600` or something else), an HTTP
//!   `4xx` without a modern error body, or silence on stdio for
//!   [`DISCOVER_PROBE_TIMEOUT`](crate::limits::DISCOVER_PROBE_TIMEOUT),
//!   means legacy: the client falls back to `initialize`.
//!
//! This module holds that decision, the version choice and the modern
//! request `_meta`; the connection ([`crate::peer`]) runs the probe on
//! whichever transport it has. The era found is a property of the server:
//! it is kept for the connection's lifetime, remembered (when found by
//! [`EraPreference::Auto`]) per HTTP origin or stdio configuration for the
//! life of the process, and can be persisted by the manager with the
//! server's row (see [`ClientOptions::era_hint`](crate::ClientOptions::era_hint)).

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::jsonrpc::codes;
use crate::limits::{MODERN_PROTOCOL_VERSIONS, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
use crate::log::LogLevel;
use crate::model::{keys, DiscoverResult, UnsupportedVersionData};

/// The protocol era a connection runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// MCP 2026-07-28 and later: stateless, per-request `_meta`.
    Modern,
    /// MCP 2025-11-25 and older: the `initialize` handshake, sessions.
    Legacy,
}

impl Era {
    /// `"modern"` or `"legacy"` (as stored and shown).
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s output.
    pub fn parse(s: &str) -> Option<Era> {
        match s {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        }
    }

    /// The era a protocol version belongs to: the known legacy versions
    /// (and anything dated before 2026) are legacy, the rest modern.
    pub fn of_version(version: &str) -> Era {
        if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) || version < "2026" {
            Era::Legacy
        } else {
            Era::Modern
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which era a connection may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    /// Probe and pick (the default): modern with modern and dual-era
    /// servers, legacy with legacy ones.
    #[default]
    Auto,
    /// Modern only: a server that does not answer `server/discover` is an
    /// error, never a fallback.
    Modern,
    /// Legacy only: `initialize`, as before 2026-07-28.
    Legacy,
}

/// The first thing to try on a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// `server/discover` with this version; `fallback`: whether a legacy
    /// answer may fall back to `initialize`.
    Modern { version: String, fallback: bool },
    /// `initialize` with this version; `fallback`: whether a rejected
    /// handshake may probe the modern era after all (a cached era that
    /// turned out wrong).
    Legacy { version: String, fallback: bool },
}

/// What a connection was asked to speak (the era parts of
/// [`ClientOptions`](crate::ClientOptions)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prefs<'a> {
    /// `ClientOptions::era`.
    pub(crate) era: EraPreference,
    /// `ClientOptions::protocol_version`.
    pub(crate) protocol_version: Option<&'a str>,
    /// `ClientOptions::era_hint`.
    pub(crate) hint: Option<Era>,
}

/// What the plan for `prefs` (and what is remembered for `origin`) is.
pub(crate) fn plan(prefs: Prefs<'_>, origin: Option<&str>) -> Plan {
    if let Some(v) = prefs.protocol_version {
        return match Era::of_version(v) {
            Era::Modern => Plan::Modern {
                version: v.to_owned(),
                fallback: false,
            },
            Era::Legacy => Plan::Legacy {
                version: v.to_owned(),
                fallback: false,
            },
        };
    }
    let modern = || MODERN_PROTOCOL_VERSIONS[0].to_owned();
    match prefs.era {
        EraPreference::Modern => Plan::Modern {
            version: modern(),
            fallback: false,
        },
        EraPreference::Legacy => Plan::Legacy {
            version: PROTOCOL_VERSION.to_owned(),
            fallback: false,
        },
        EraPreference::Auto => {
            let hint = prefs.hint.or_else(|| origin.and_then(remembered));
            match hint {
                Some(Era::Legacy) => Plan::Legacy {
                    version: PROTOCOL_VERSION.to_owned(),
                    fallback: true,
                },
                _ => Plan::Modern {
                    version: modern(),
                    fallback: true,
                },
            }
        }
    }
}

/// Whether `code` is an error only a modern server sends: receiving one in
/// answer to the probe proves the server modern.
pub(crate) fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        codes::UNSUPPORTED_PROTOCOL_VERSION
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::HEADER_MISMATCH
    )
}

/// The most preferred modern version in `supported`.
pub(crate) fn pick_modern(supported: &[String]) -> Option<String> {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .find(|v| supported.iter().any(|s| s == *v))
        .map(|v| (*v).to_owned())
}

/// The most preferred legacy version in `supported`.
pub(crate) fn pick_legacy(supported: &[String]) -> Option<String> {
    SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .find(|v| supported.iter().any(|s| s == *v))
        .map(|v| (*v).to_owned())
}

/// What the answer to a `server/discover` probe says.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// A modern server that supports `version`.
    Modern {
        version: String,
        discover: Box<DiscoverResult>,
    },
    /// A modern server that wants another version: ask again with it.
    Retry { version: String },
    /// A modern server with no version in common with this client, or that
    /// refused the probe for a modern reason (the error says which).
    ModernRefused {
        supported: Vec<String>,
        message: String,
    },
    /// A server that answered a `DiscoverResult` listing only legacy
    /// versions: `initialize` with this one.
    LegacyVersion(String),
    /// Not a modern server: why (for the log).
    Legacy(String),
}

/// A JSON-RPC error as the probe sees it: `(code, message, data)`.
pub(crate) type RpcAnswer<'a> = (i64, &'a str, Option<&'a Value>);

/// Classifies the answer to a probe sent with `requested`. `Err` is the
/// JSON-RPC error `(code, message, data)`, or `None` for an answer that was
/// no JSON-RPC response at all (an HTTP error without a JSON-RPC body).
pub(crate) fn classify(
    answer: std::result::Result<&Value, Option<RpcAnswer<'_>>>,
    requested: &str,
) -> Verdict {
    match answer {
        Ok(result) => match DiscoverResult::parse(result) {
            Some(d) => {
                if d.supported_versions.iter().any(|v| v == requested) {
                    Verdict::Modern {
                        version: requested.to_owned(),
                        discover: Box::new(d),
                    }
                } else if let Some(v) = pick_modern(&d.supported_versions) {
                    Verdict::Modern {
                        version: v,
                        discover: Box::new(d),
                    }
                } else if let Some(v) = pick_legacy(&d.supported_versions) {
                    Verdict::LegacyVersion(v)
                } else if d.supported_versions.is_empty() {
                    // A server that answers but names no version: take it at
                    // its word that it is modern, with the version asked for.
                    Verdict::Modern {
                        version: requested.to_owned(),
                        discover: Box::new(d),
                    }
                } else {
                    Verdict::ModernRefused {
                        message: format!(
                            "the server supports {} and this client {}",
                            d.supported_versions.join(", "),
                            all_versions()
                        ),
                        supported: d.supported_versions,
                    }
                }
            }
            None => Verdict::Legacy(format!(
                "server/discover was answered with something that is not a DiscoverResult: {}",
                crate::json::excerpt(result)
            )),
        },
        Err(Some((code, _message, data))) if code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let d = UnsupportedVersionData::from_data(data);
            match pick_modern(&d.supported) {
                // Even the version just sent: the server may have refused it
                // for a passing reason; the caller retries once only.
                Some(v) => Verdict::Retry { version: v },
                None => match pick_legacy(&d.supported) {
                    Some(v) => Verdict::LegacyVersion(v),
                    None => Verdict::ModernRefused {
                        message: format!(
                            "the server supports {} and this client {}",
                            if d.supported.is_empty() {
                                "no version it named".to_owned()
                            } else {
                                d.supported.join(", ")
                            },
                            all_versions()
                        ),
                        supported: d.supported,
                    },
                },
            }
        }
        Err(Some((code, message, _))) if is_modern_error(code) => Verdict::ModernRefused {
            supported: Vec::new(),
            message: format!("server/discover failed with {code}: {message}"),
        },
        Err(Some((code, message, _))) => Verdict::Legacy(format!(
            "server/discover was answered with error {code} ({message})"
        )),
        Err(None) => Verdict::Legacy("server/discover was refused without a JSON-RPC error".into()),
    }
}

/// Every version this client speaks, for error messages.
fn all_versions() -> String {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .chain(SUPPORTED_PROTOCOL_VERSIONS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `_meta` every modern request carries.
pub(crate) fn request_meta(
    version: &str,
    capabilities: &Value,
    client_info: &Value,
    log_level: Option<LogLevel>,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(keys::PROTOCOL_VERSION.into(), Value::from(version));
    m.insert(keys::CLIENT_CAPABILITIES.into(), capabilities.clone());
    m.insert(keys::CLIENT_INFO.into(), client_info.clone());
    if let Some(l) = log_level {
        m.insert(keys::LOG_LEVEL.into(), Value::from(l.as_str()));
    }
    m
}

/// The origin (`scheme://host:port`) of an HTTP URL, the key under which
/// its era is remembered.
pub(crate) fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    Some(format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        host.to_ascii_lowercase()
    ))
}

fn cache() -> &'static Mutex<HashMap<String, Era>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Era>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The era last found at `origin` in this process.
pub(crate) fn remembered(origin: &str) -> Option<Era> {
    cache().lock().get(origin).copied()
}

/// Remembers the era found at `origin` (bounded: a process talks to few
/// origins, but a hostile configuration must not grow this forever).
pub(crate) fn remember(origin: &str, era: Era) {
    const MAX_ORIGINS: usize = 1024;
    let mut c = cache().lock();
    if c.len() >= MAX_ORIGINS && !c.contains_key(origin) {
        c.clear();
    }
    c.insert(origin.to_owned(), era);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(v: Value) -> Verdict {
        classify(Ok(&v), "2026-07-28")
    }

    #[test]
    fn discover_results() {
        assert!(matches!(
            ok(json!({"supportedVersions": ["2026-07-28"], "capabilities": {}})),
            Verdict::Modern { version, .. } if version == "2026-07-28"
        ));
        assert!(matches!(
            ok(json!({"supportedVersions": ["2025-11-25"]})),
            Verdict::LegacyVersion(v) if v == "2025-11-25"
        ));
        assert!(matches!(
            ok(json!({"supportedVersions": ["2099-01-01"]})),
            Verdict::ModernRefused { .. }
        ));
        assert!(matches!(ok(json!({"tools": []})), Verdict::Legacy(_)));
        assert!(matches!(ok(json!("garbage")), Verdict::Legacy(_)));
    }

    #[test]
    fn errors_never_keyed_to_one_code() {
        for code in [-32601, -32602, -32600, -32603, -32000, 0, 42] {
            assert!(
                matches!(
                    classify(Err(Some((code, "no", None))), "2026-07-28"),
                    Verdict::Legacy(_)
                ),
                "{code}"
            );
        }
        assert!(matches!(
            classify(Err(None), "2026-07-28"),
            Verdict::Legacy(_)
        ));
        let data = json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "2027-01-01"});
        assert!(matches!(
            classify(Err(Some((-32022, "unsupported", Some(&data)))), "2027-01-01"),
            Verdict::Retry { version } if version == "2026-07-28"
        ));
        let data = json!({"supported": ["2025-06-18"]});
        assert!(matches!(
            classify(Err(Some((-32022, "unsupported", Some(&data)))), "2026-07-28"),
            Verdict::LegacyVersion(v) if v == "2025-06-18"
        ));
        assert!(matches!(
            classify(Err(Some((-32021, "caps", None))), "2026-07-28"),
            Verdict::ModernRefused { .. }
        ));
    }

    #[test]
    fn eras_of_versions() {
        assert_eq!(Era::of_version("2026-07-28"), Era::Modern);
        assert_eq!(Era::of_version("2025-11-25"), Era::Legacy);
        assert_eq!(Era::of_version("2024-11-05"), Era::Legacy);
        assert_eq!(Era::parse("modern"), Some(Era::Modern));
        assert_eq!(Era::parse(Era::Legacy.as_str()), Some(Era::Legacy));
    }

    #[test]
    fn plans() {
        let o = Prefs::default();
        assert!(matches!(plan(o, None), Plan::Modern { fallback: true, .. }));
        let o = Prefs {
            era: EraPreference::Legacy,
            ..Prefs::default()
        };
        assert!(matches!(
            plan(o, None),
            Plan::Legacy {
                fallback: false,
                ..
            }
        ));
        let o = Prefs {
            hint: Some(Era::Legacy),
            ..Prefs::default()
        };
        assert!(matches!(plan(o, None), Plan::Legacy { fallback: true, .. }));
        // What an origin spoke before is tried first.
        remember("http://cached.test", Era::Legacy);
        assert!(matches!(
            plan(Prefs::default(), Some("http://cached.test")),
            Plan::Legacy { fallback: true, .. }
        ));
        let o = Prefs {
            protocol_version: Some("2025-06-18"),
            ..Prefs::default()
        };
        assert_eq!(
            plan(o, None),
            Plan::Legacy {
                version: "2025-06-18".into(),
                fallback: false
            }
        );
    }

    #[test]
    fn origins() {
        assert_eq!(
            origin("HTTP://User:pw@Example.test:8080/mcp?x=1").as_deref(),
            Some("http://example.test:8080")
        );
        assert_eq!(origin("not a url"), None);
    }
}
