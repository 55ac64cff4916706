//! Command-line parsing, by hand: the grammar is small and a parser crate
//! would be the binary's largest dependency.

use std::fmt;

/// A usage error: exit code 2, one line on stderr.
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a direct (`connect`) session goes.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command to spawn.
    Command(Vec<String>),
    /// A streamable-HTTP URL, with an optional bearer token.
    Url {
        url: String,
        api_key: Option<String>,
    },
}

/// A verb that talks to one server.
#[derive(Debug, Clone)]
pub enum Verb {
    Tools,
    Call {
        tool: String,
        arguments: serde_json::Value,
    },
    Resources,
    Read {
        uri: String,
    },
    Prompts,
    Ping,
}

/// A parsed command line.
#[derive(Debug)]
pub enum Cmd {
    Help,
    Version,
    Add {
        name: String,
        target: Target,
        env: Vec<(String, String)>,
        /// Stored with the server: it inherits the whole environment.
        inherit_env: bool,
        description: Option<String>,
        friendly_name: Option<String>,
        disabled: bool,
    },
    List {
        check: bool,
    },
    Remove {
        name: String,
    },
    SetEnabled {
        name: String,
        enabled: bool,
    },
    /// A verb on a stored server (`tools` without a server: all of them).
    OnServer {
        server: Option<String>,
        verb: Verb,
    },
    Events {
        pending: bool,
        limit: usize,
    },
    Logs {
        server: String,
        follow: bool,
    },
    Connect {
        target: Target,
        verb: Verb,
    },
}

/// Options that apply to every command.
#[derive(Debug, Default)]
pub struct Global {
    pub db: Option<String>,
    pub json: bool,
    pub timeout: Option<std::time::Duration>,
    pub media_dir: Option<String>,
    /// Every stdio server started by this run inherits the whole
    /// environment (not only the allowlist and its `env`).
    pub inherit_env: bool,
}

pub const USAGE: &str = "\
skald-mcp — a command-line MCP client

USAGE:
  skald-mcp [--db PATH] [--json] [--timeout SECS] [--media-dir DIR] [--inherit-env] COMMAND

Servers (stored in the database; default $SKALD_MCP_DB, else
$XDG_DATA_HOME/skald-mcp/mcp.db or ~/.local/share/skald-mcp/mcp.db):
  add NAME [--env K=V]... [--inherit-env] [--description D] [--friendly-name F] [--disabled] -- COMMAND [ARGS...]
  add NAME --url URL [--api-key KEY] [--description D] [--friendly-name F] [--disabled]
  list [--check]                 servers; --check connects each and shows its status
  remove NAME
  enable NAME | disable NAME

Talking to a stored server:
  tools [SERVER]                 tools with titles, descriptions and annotations
  call SERVER TOOL [JSON] [--arg K=V]...
  resources SERVER
  read SERVER URI
  prompts SERVER
  ping SERVER
  events [--pending] [--limit N] events servers sent (newest last)
  logs SERVER [--follow]         the server's log file

A direct connection, without the database:
  connect VERB [VERB ARGS] -- COMMAND [ARGS...]
  connect VERB [VERB ARGS] --url URL [--api-key KEY]
     VERB is one of: tools, call TOOL [JSON] [--arg K=V]..., resources, read URI, prompts, ping

HTTP servers without --api-key may ask for OAuth: the authorization URL is
printed and the browser's redirect comes back to a loopback port; tokens are
kept in the database. SKALD_MCP_OAUTH_HEADLESS=1 follows the URL without a
browser (servers that approve automatically).

A stdio server gets only HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG,
LC_ALL, LC_CTYPE, TZ and TMPDIR from this environment, plus its --env
(values may be ${VAR}); --inherit-env passes the whole environment (with
add: stored with the server; before COMMAND: for every server of this run).

Exit codes: 0 success, 1 tool error, 2 usage error, 3 connection or protocol error.
RUST_LOG=mcp_client=debug shows the servers' stderr.";

struct Cursor {
    args: Vec<String>,
    pos: usize,
}

impl Cursor {
    fn next(&mut self) -> Option<String> {
        let a = self.args.get(self.pos).cloned();
        if a.is_some() {
            self.pos += 1;
        }
        a
    }
    fn peek(&self) -> Option<&str> {
        self.args.get(self.pos).map(String::as_str)
    }
    fn value(&mut self, flag: &str) -> Result<String, Usage> {
        self.next()
            .ok_or_else(|| Usage(format!("{flag} needs a value")))
    }
    fn positional(&mut self, what: &str) -> Result<String, Usage> {
        match self.next() {
            Some(a) if !a.starts_with("--") => Ok(a),
            Some(a) => Err(Usage(format!("expected {what}, got option {a}"))),
            None => Err(Usage(format!("missing {what}"))),
        }
    }
    fn rest(&mut self) -> Vec<String> {
        let r = self.args[self.pos..].to_vec();
        self.pos = self.args.len();
        r
    }
    fn done(&self) -> Result<(), Usage> {
        match self.peek() {
            None => Ok(()),
            Some(a) => Err(Usage(format!("unexpected argument {a:?}"))),
        }
    }
}

fn parse_kv(s: &str, flag: &str) -> Result<(String, String), Usage> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(Usage(format!("{flag} takes KEY=VALUE, got {s:?}"))),
    }
}

/// `--arg k=v`: the value is JSON when it parses as JSON, else a string.
fn arg_value(v: &str) -> serde_json::Value {
    serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_owned()))
}

fn parse_call_args(c: &mut Cursor, g: &mut Global) -> Result<serde_json::Value, Usage> {
    let mut args = serde_json::Map::new();
    let mut json_given = false;
    while let Some(a) = c.peek().map(str::to_owned) {
        match a.as_str() {
            "--" | "--url" | "--api-key" => break,
            "--arg" => {
                c.next();
                let (k, v) = parse_kv(&c.value("--arg")?, "--arg")?;
                args.insert(k, arg_value(&v));
            }
            "--json" => {
                c.next();
                g.json = true;
            }
            s if s.starts_with("--") => return Err(Usage(format!("unknown option {s}"))),
            s => {
                c.next();
                if json_given {
                    return Err(Usage(format!("unexpected argument {s:?}")));
                }
                json_given = true;
                match serde_json::from_str::<serde_json::Value>(s) {
                    Ok(serde_json::Value::Object(m)) => args.extend(m),
                    Ok(_) => return Err(Usage("the tool arguments must be a JSON object".into())),
                    Err(e) => {
                        return Err(Usage(format!("the tool arguments are not valid JSON: {e}")))
                    }
                }
            }
        }
    }
    Ok(serde_json::Value::Object(args))
}

fn parse_verb(c: &mut Cursor, g: &mut Global, verb: &str) -> Result<Verb, Usage> {
    Ok(match verb {
        "tools" => Verb::Tools,
        "call" => {
            let tool = c.positional("TOOL")?;
            Verb::Call {
                tool,
                arguments: parse_call_args(c, g)?,
            }
        }
        "resources" => Verb::Resources,
        "read" => Verb::Read {
            uri: c.positional("URI")?,
        },
        "prompts" => Verb::Prompts,
        "ping" => Verb::Ping,
        other => return Err(Usage(format!("unknown verb {other:?}"))),
    })
}

fn parse_target(c: &mut Cursor) -> Result<Option<Target>, Usage> {
    match c.peek() {
        Some("--") => {
            c.next();
            let cmd = c.rest();
            if cmd.is_empty() {
                return Err(Usage("missing COMMAND after --".into()));
            }
            Ok(Some(Target::Command(cmd)))
        }
        Some("--url") => {
            c.next();
            let url = c.value("--url")?;
            let mut api_key = None;
            if c.peek() == Some("--api-key") {
                c.next();
                api_key = Some(c.value("--api-key")?);
            }
            Ok(Some(Target::Url { url, api_key }))
        }
        _ => Ok(None),
    }
}

/// Parses the arguments after the program name.
pub fn parse(args: Vec<String>) -> Result<(Global, Cmd), Usage> {
    let mut g = Global::default();
    let mut c = Cursor { args, pos: 0 };
    // Global options come first.
    loop {
        match c.peek() {
            Some("--db") => {
                c.next();
                g.db = Some(c.value("--db")?);
            }
            Some("--json") => {
                c.next();
                g.json = true;
            }
            Some("--timeout") => {
                c.next();
                let v = c.value("--timeout")?;
                let secs: f64 = v
                    .parse()
                    .map_err(|_| Usage(format!("--timeout takes seconds, got {v:?}")))?;
                if !(secs > 0.0 && secs.is_finite()) {
                    return Err(Usage("--timeout must be positive".into()));
                }
                g.timeout = Some(std::time::Duration::from_secs_f64(secs));
            }
            Some("--media-dir") => {
                c.next();
                g.media_dir = Some(c.value("--media-dir")?);
            }
            Some("--inherit-env") => {
                c.next();
                g.inherit_env = true;
            }
            _ => break,
        }
    }
    let Some(cmd) = c.next() else {
        return Err(Usage("missing COMMAND (try --help)".into()));
    };
    let parsed = match cmd.as_str() {
        "-h" | "--help" | "help" => Cmd::Help,
        "-V" | "--version" | "version" => Cmd::Version,
        "add" => {
            let name = c.positional("NAME")?;
            let (mut env, mut description, mut friendly_name, mut disabled) =
                (Vec::new(), None, None, false);
            let mut inherit_env = false;
            let target = loop {
                match c.peek() {
                    Some("--env") => {
                        c.next();
                        env.push(parse_kv(&c.value("--env")?, "--env")?);
                    }
                    Some("--description") => {
                        c.next();
                        description = Some(c.value("--description")?);
                    }
                    Some("--friendly-name") => {
                        c.next();
                        friendly_name = Some(c.value("--friendly-name")?);
                    }
                    Some("--disabled") => {
                        c.next();
                        disabled = true;
                    }
                    Some("--inherit-env") => {
                        c.next();
                        inherit_env = true;
                    }
                    Some("--" | "--url") => break parse_target(&mut c)?.expect("peeked a target"),
                    Some(other) => {
                        return Err(Usage(format!("unexpected argument {other:?} to add")))
                    }
                    None => {
                        return Err(Usage(
                            "add needs `-- COMMAND ARGS...` or `--url URL`".into(),
                        ))
                    }
                }
            };
            // Options may also follow --url.
            while let Some(a) = c.peek().map(str::to_owned) {
                c.next();
                match a.as_str() {
                    "--description" => description = Some(c.value("--description")?),
                    "--friendly-name" => friendly_name = Some(c.value("--friendly-name")?),
                    "--disabled" => disabled = true,
                    other => return Err(Usage(format!("unexpected argument {other:?} to add"))),
                }
            }
            if inherit_env && matches!(target, Target::Url { .. }) {
                return Err(Usage(
                    "--inherit-env applies to stdio servers, not --url".into(),
                ));
            }
            Cmd::Add {
                name,
                target,
                env,
                inherit_env,
                description,
                friendly_name,
                disabled,
            }
        }
        "list" => {
            let check = c.peek() == Some("--check");
            if check {
                c.next();
            }
            Cmd::List { check }
        }
        "remove" => Cmd::Remove {
            name: c.positional("NAME")?,
        },
        "enable" | "disable" => Cmd::SetEnabled {
            name: c.positional("NAME")?,
            enabled: cmd == "enable",
        },
        "tools" => {
            let server = match c.peek() {
                Some(s) if !s.starts_with("--") => c.next(),
                _ => None,
            };
            Cmd::OnServer {
                server,
                verb: Verb::Tools,
            }
        }
        "call" | "resources" | "read" | "prompts" | "ping" => {
            let server = c.positional("SERVER")?;
            let verb = parse_verb(&mut c, &mut g, &cmd)?;
            Cmd::OnServer {
                server: Some(server),
                verb,
            }
        }
        "events" => {
            let (mut pending, mut limit) = (false, 50usize);
            while let Some(a) = c.next() {
                match a.as_str() {
                    "--pending" => pending = true,
                    "--limit" => {
                        let v = c.value("--limit")?;
                        limit = v
                            .parse()
                            .map_err(|_| Usage(format!("--limit takes a number, got {v:?}")))?;
                    }
                    other => return Err(Usage(format!("unexpected argument {other:?} to events"))),
                }
            }
            Cmd::Events { pending, limit }
        }
        "logs" => {
            let server = c.positional("SERVER")?;
            let follow = c.peek() == Some("--follow") || c.peek() == Some("-f");
            if follow {
                c.next();
            }
            Cmd::Logs { server, follow }
        }
        "connect" => {
            let v = c.positional("VERB")?;
            let verb = parse_verb(&mut c, &mut g, &v)?;
            let target = parse_target(&mut c)?.ok_or_else(|| {
                Usage("connect needs `-- COMMAND ARGS...` or `--url URL` after the verb".into())
            })?;
            Cmd::Connect { target, verb }
        }
        other => return Err(Usage(format!("unknown command {other:?} (try --help)"))),
    };
    c.done()?;
    Ok((g, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Result<(Global, Cmd), Usage> {
        parse(s.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn grammar() {
        assert!(
            matches!(p(&["add", "demo", "--env", "A=1", "--", "python3", "x.py", "--flag"]).unwrap().1,
            Cmd::Add { target: Target::Command(c), env, .. } if c == ["python3", "x.py", "--flag"] && env == [("A".into(), "1".into())])
        );
        assert!(matches!(
            p(&["add", "h", "--url", "http://x", "--api-key", "${K}"])
                .unwrap()
                .1,
            Cmd::Add {
                target: Target::Url {
                    api_key: Some(_),
                    ..
                },
                ..
            }
        ));
        let (g, c) = p(&[
            "--json",
            "call",
            "demo",
            "echo",
            "{\"text\":\"hi\"}",
            "--arg",
            "n=5",
        ])
        .unwrap();
        assert!(g.json);
        let Cmd::OnServer {
            verb: Verb::Call { arguments, .. },
            ..
        } = c
        else {
            panic!()
        };
        assert_eq!(arguments, serde_json::json!({"text": "hi", "n": 5}));
        assert!(matches!(
            p(&["connect", "tools", "--", "python3", "s.py"]).unwrap().1,
            Cmd::Connect {
                verb: Verb::Tools,
                ..
            }
        ));
        assert!(matches!(
            p(&[
                "connect",
                "call",
                "echo",
                "--arg",
                "text=x",
                "--url",
                "http://h/mcp"
            ])
            .unwrap()
            .1,
            Cmd::Connect {
                target: Target::Url { .. },
                ..
            }
        ));
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &[][..],
            &["frobnicate"],
            &["add"],
            &["add", "x"],
            &["call", "s"],
            &["call", "s", "t", "[1]"],
            &["call", "s", "t", "{bad"],
            &["events", "--limit", "x"],
            &["connect", "tools"],
            &["--timeout", "-1", "list"],
            &["list", "extra"],
            &["add", "x", "--"],
        ] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
    }
}
