//! The person in the loop: an [`AuthorizationHandler`] opens the
//! authorization URL and returns where the browser was sent back to.

use super::*;

/// Opens the authorization URL for a person and returns the URL the
/// authorization server redirected to (carrying `code` and `state`).
pub trait AuthorizationHandler: Send + Sync {
    /// `authorization_url` is to be opened; `redirect_uri` is where the
    /// server will send the browser back.
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String>;
}

/// Follows the authorization URL with plain HTTP requests (no browser) and
/// returns the redirect `Location` that points at the redirect URI. For
/// tests, the conformance suite, and servers that approve automatically.
pub struct HeadlessAuthorizer {
    agent: Agent,
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        HeadlessAuthorizer {
            agent: auth_agent(0),
        }
    }
}

impl AuthorizationHandler for HeadlessAuthorizer {
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String> {
        let mut url = authorization_url.to_owned();
        for _ in 0..10 {
            let resp = self
                .agent
                .get(&url)
                .call()
                .map_err(|e| format!("GET authorization URL failed: {e}"))?;
            let status = resp.status().as_u16();
            let location = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match location {
                Some(loc) if (300..400).contains(&status) => {
                    let loc = if loc.starts_with('/') {
                        let (origin, _) = url::split(&url).ok_or("bad authorization URL")?;
                        format!("{origin}{loc}")
                    } else {
                        loc
                    };
                    if loc.starts_with(redirect_uri) {
                        return Ok(loc);
                    }
                    url = loc;
                }
                _ => {
                    return Err(format!(
                        "the authorization endpoint answered HTTP {status} without redirecting"
                    ))
                }
            }
        }
        Err("too many redirects at the authorization endpoint".into())
    }
}

/// For a person at a terminal: shows the authorization URL (by default on
/// stderr), listens on the loopback address and port of the redirect URI,
/// and returns the redirect the browser makes to it (RFC 8252 §7.3).
pub struct LoopbackAuthorizer {
    show: Box<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl Default for LoopbackAuthorizer {
    fn default() -> Self {
        LoopbackAuthorizer::new(|url| {
            eprintln!("Open this URL in a browser to authorize:\n  {url}")
        })
    }
}

impl LoopbackAuthorizer {
    /// Calls `show` with the authorization URL (to print it, or open a browser).
    pub fn new(show: impl Fn(&str) + Send + Sync + 'static) -> LoopbackAuthorizer {
        LoopbackAuthorizer {
            show: Box::new(show),
            timeout: crate::limits::AUTH_LOOPBACK_TIMEOUT,
        }
    }

    /// How long to wait for the browser (default
    /// [`AUTH_LOOPBACK_TIMEOUT`](crate::limits::AUTH_LOOPBACK_TIMEOUT)).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = d;
        self
    }
}

impl AuthorizationHandler for LoopbackAuthorizer {
    fn authorize(
        &self,
        authorization_url: &str,
        redirect_uri: &str,
    ) -> std::result::Result<String, String> {
        use std::io::Write;
        let (origin, path) = url::split(redirect_uri).ok_or("the redirect URI is not http")?;
        let hostport = origin.trim_start_matches("http://");
        if !(hostport.starts_with("127.0.0.1:")
            || hostport.starts_with("localhost:")
            || hostport.starts_with("[::1]:"))
        {
            return Err(format!(
                "the redirect URI {redirect_uri} is not a loopback address with a port"
            ));
        }
        let bind = hostport.replace("localhost", "127.0.0.1");
        let listener = std::net::TcpListener::bind(&bind)
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        (self.show)(authorization_url);
        let deadline = std::time::Instant::now() + self.timeout;
        loop {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut line = String::new();
                    let mut reader =
                        std::io::BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
                    let _ = std::io::BufRead::read_line(&mut reader, &mut line);
                    let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let ok = target.starts_with(&path) || path.is_empty();
                    let body = if ok {
                        "Authorized. You can close this window."
                    } else {
                        "Not the authorization redirect."
                    };
                    let _ = write!(
                        stream,
                        "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        if ok { "200 OK" } else { "404 Not Found" },
                        body.len()
                    );
                    if ok {
                        return Ok(format!("{origin}{target}"));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if std::time::Instant::now() >= deadline {
                        return Err("no redirect arrived before the deadline".into());
                    }
                    // Waiting for a person's browser: a short poll is fine here.
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(format!("accepting the redirect failed: {e}")),
            }
        }
    }
}
