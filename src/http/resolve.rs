//! Name resolution for the HTTP agents, without a thread per request.
//!
//! ureq resolves the URL's host before *every* request, also one that then
//! reuses a pooled connection, and its default resolver enforces the
//! resolve timeout by starting a thread for each lookup. Traced on
//! loopback: one `clone3` per `tools/call`, a thread start on the path of
//! every request. This resolver answers IP literals at once (the usual
//! local server) and keeps a name's addresses for [`HTTP_RESOLVE_CACHE_TTL`],
//! which is what a pooled connection to that name amounts to anyway; a miss
//! goes to ureq's own resolver, timeout and all.
//!
//! ureq's resolver interface is outside its semver promise (`unversioned`),
//! which is why `Cargo.toml` pins ureq's minor version.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use parking_lot::Mutex;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use crate::limits::{HTTP_RESOLVE_CACHE_ENTRIES, HTTP_RESOLVE_CACHE_TTL};

/// IP literals directly, names through a short cache in front of ureq's
/// [`DefaultResolver`].
#[derive(Default)]
pub(crate) struct CachingResolver {
    inner: DefaultResolver,
    /// `host:port` → when it was resolved, and to what.
    cache: Mutex<HashMap<String, (Instant, ResolvedSocketAddrs)>>,
}

impl fmt::Debug for CachingResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachingResolver")
            .field("cached", &self.cache.lock().len())
            .finish()
    }
}

/// The port of `uri`, explicit or the scheme's.
fn port_of(uri: &Uri) -> Option<u16> {
    uri.port_u16().or(match uri.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })
}

/// The address an IP-literal host names (`127.0.0.1`, `[::1]`).
fn literal(uri: &Uri) -> Option<SocketAddr> {
    let host = uri.host()?;
    let ip: IpAddr = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()?;
    Some(SocketAddr::new(ip, port_of(uri)?))
}

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if let Some(addr) = literal(uri) {
            let mut v = self.inner.empty();
            v.push(addr);
            return Ok(v);
        }
        let key = match (uri.host(), port_of(uri)) {
            (Some(h), Some(p)) => format!("{}:{p}", h.to_ascii_lowercase()),
            // Let ureq explain what is wrong with the URL.
            _ => return self.inner.resolve(uri, config, timeout),
        };
        if let Some((at, addrs)) = self.cache.lock().get(&key) {
            if at.elapsed() < HTTP_RESOLVE_CACHE_TTL {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let mut cache = self.cache.lock();
        if cache.len() >= HTTP_RESOLVE_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_answered_without_a_lookup() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(
            literal(&uri("http://127.0.0.1:8000/mcp")),
            Some("127.0.0.1:8000".parse().unwrap())
        );
        assert_eq!(
            literal(&uri("http://[::1]/mcp")),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            literal(&uri("https://10.0.0.1/x")),
            Some("10.0.0.1:443".parse().unwrap())
        );
        assert_eq!(literal(&uri("http://localhost:8000/mcp")), None);
    }

    #[test]
    fn names_are_cached() {
        let r = CachingResolver::default();
        let cfg = Config::default();
        let uri: Uri = "http://localhost:8000/mcp".parse().unwrap();
        let first = r.resolve(&uri, &cfg, NextTimeout::default());
        let Ok(first) = first else {
            // No resolver for localhost on this machine: nothing to cache.
            return;
        };
        assert_eq!(r.cache.lock().len(), 1);
        let again = r.resolve(&uri, &cfg, NextTimeout::default()).unwrap();
        assert_eq!(first.as_ref(), again.as_ref());
    }
}
