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
    /// An HTTP URL, with an optional bearer token: Streamable HTTP (with
    /// the fallback to HTTP+SSE), or HTTP+SSE only with `--sse`.
    Url {
        url: String,
        api_key: Option<String>,
        sse: bool,
        /// `--header "Name: value"`, in order.
        headers: Vec<(String, String)>,
    },
    /// An entry of an `mcpServers` JSON file (the only one, or `--server`).
    Config {
        file: String,
        server: Option<String>,
    },
}

/// A verb that talks to one server.
#[derive(Debug, Clone)]
pub enum Verb {
    Tools,
    Call {
        tool: String,
        /// The JSON object given whole.
        arguments: serde_json::Value,
        /// `--arg K=V`, typed later from the tool's input schema.
        raw_args: Vec<(String, String)>,
    },
    Resources,
    Read {
        uri: String,
    },
    Prompts,
    /// `prompts/get` with string arguments.
    Prompt {
        name: String,
        args: Vec<(String, String)>,
    },
    Ping,
    /// Any method, its result printed as JSON.
    Rpc {
        method: String,
        params: Option<serde_json::Value>,
    },
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
        env: Vec<(String, String)>,
        inherit_env: bool,
    },
    /// Stores the servers of an `mcpServers` JSON file.
    Import {
        file: String,
        replace: bool,
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
    /// No log records or progress on stderr.
    pub quiet: bool,
    /// The least level of the log records asked for and shown.
    pub log_level: Option<skald_mcp::LogLevel>,
}

pub const USAGE: &str = "\
skald-mcp — a command-line MCP client

USAGE:
  skald-mcp [--db PATH] [--json] [-q] [--log-level LEVEL] [--timeout SECS] [--media-dir DIR]
            [--inherit-env] COMMAND

Servers (stored in the database; default $SKALD_MCP_DB, else
$XDG_DATA_HOME/skald-mcp/mcp.db or ~/.local/share/skald-mcp/mcp.db):
  add NAME [--env K=V]... [--inherit-env] [--description D] [--friendly-name F] [--disabled] -- COMMAND [ARGS...]
  add NAME --url URL [--api-key KEY] [--header \"K: V\"]... [--sse] [--description D] [--friendly-name F] [--disabled]
  list [--check]                 servers; --check connects each and shows its status
  remove NAME
  enable NAME | disable NAME
  import FILE [--replace]        servers from an mcpServers JSON file (Claude Desktop,
                                 Cursor, Claude Code's .mcp.json, VS Code's mcp.json)

Talking to a stored server:
  tools [SERVER]                 tools with titles, descriptions and annotations
  call SERVER TOOL [JSON] [--arg K=V]...
  resources SERVER
  read SERVER URI
  prompts SERVER
  prompt SERVER NAME [--arg K=V]...  a prompt's messages
  ping SERVER
  rpc SERVER METHOD [JSON]       any request; its result as JSON
  events [--pending] [--limit N] events servers sent (newest last)
  logs SERVER [--follow]         the server's log file

A direct connection, without the database:
  connect VERB [VERB ARGS] [--env K=V]... [--inherit-env] -- COMMAND [ARGS...]
  connect VERB [VERB ARGS] --url URL [--api-key KEY] [--header \"K: V\"]... [--sse]
  connect VERB [VERB ARGS] --config FILE [--server NAME] [--env K=V]...
     VERB is one of: tools, call TOOL [JSON] [--arg K=V]..., resources, read URI,
     prompts, prompt NAME [--arg K=V]..., ping, rpc METHOD [JSON]

Output: text content as it is (structured content only when there is no
text; a {\"result\": …} wrapper is unwrapped); media is saved under
--media-dir and shown as a path. --json prints the whole result as JSON.
--arg values are typed from the tool's input schema (a string stays a
string; numbers, booleans and JSON where the schema asks for them).
The server's log records and progress go to stderr; -q silences them.
--log-level LEVEL asks the server for records of LEVEL and above
(logging/setLevel, or per request in the 2026-07-28 era) and shows only those.

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

/// The JSON types a property of an input schema accepts: its `type`
/// (one or a list), else those of its `anyOf`/`oneOf` branches; `enum` and
/// `const` say it by their values. `None`: the schema does not say.
fn accepted_types(prop: &serde_json::Value) -> Option<Vec<&'static str>> {
    use serde_json::Value;
    fn name(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    const KNOWN: &[&str] = &[
        "null", "boolean", "integer", "number", "string", "array", "object",
    ];
    let known = |s: &str| KNOWN.iter().copied().find(|k| *k == s);
    let mut out = Vec::new();
    match prop.get("type") {
        Some(Value::String(t)) => out.extend(known(t)),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str).filter_map(known)),
        _ => {}
    }
    if let Some(Value::Array(vals)) = prop.get("enum") {
        out.extend(vals.iter().map(name));
    }
    if let Some(v) = prop.get("const") {
        out.push(name(v));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = prop.get(key) {
            for b in branches {
                out.extend(accepted_types(b).unwrap_or_default());
            }
        }
    }
    out.dedup();
    (!out.is_empty()).then_some(out)
}

/// Types `--arg K=V` values from the tool's input schema: a string stays
/// a string even when it looks like a number (`query=123`), a number or
/// boolean is parsed where the schema asks for one (and refused, naming
/// the argument, when it is not one), JSON where an array or object is
/// asked. Where the schema does not say, JSON when it parses, else a
/// string.
pub fn type_args(
    schema: Option<&serde_json::Value>,
    raw: &[(String, String)],
    into: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), Usage> {
    use serde_json::Value;
    for (k, v) in raw {
        let accepted = schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(k))
            .and_then(accepted_types);
        let parsed = serde_json::from_str::<Value>(v).ok();
        let value = match accepted {
            None => parsed.unwrap_or_else(|| Value::String(v.clone())),
            Some(types) => {
                let fits = |x: &Value| {
                    types.iter().any(|t| match (*t, x) {
                        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
                        ("number", Value::Number(_)) => true,
                        ("boolean", Value::Bool(_)) => true,
                        ("null", Value::Null) => true,
                        ("array", Value::Array(_)) => true,
                        ("object", Value::Object(_)) => true,
                        _ => false,
                    })
                };
                match parsed {
                    // A string is taken as typed before any JSON reading of
                    // it, unless the schema also accepts what it parses to
                    // and not a string (`null` for a nullable string).
                    Some(x) if fits(&x) && (x.is_null() || !types.contains(&"string")) => x,
                    _ if types.contains(&"string") => Value::String(v.clone()),
                    _ => {
                        return Err(Usage(format!(
                            "--arg {k}: the tool's schema asks for {}, got {v:?}",
                            types.join(" or ")
                        )))
                    }
                }
            }
        };
        into.insert(k.clone(), value);
    }
    Ok(())
}

/// The options of `connect` that end a verb's arguments.
const CONNECT_OPTIONS: &[&str] = &[
    "--",
    "--url",
    "--api-key",
    "--header",
    "--sse",
    "--config",
    "--server",
    "--env",
    "--inherit-env",
];

/// A tool's arguments: a JSON object and `--arg K=V` pairs (typed later,
/// from the tool's input schema).
fn parse_call_args(
    c: &mut Cursor,
    g: &mut Global,
) -> Result<(serde_json::Value, Vec<(String, String)>), Usage> {
    parse_args(c, g, true)
}

/// `--arg K=V` pairs only (prompt arguments are strings).
fn parse_string_args(c: &mut Cursor, g: &mut Global) -> Result<Vec<(String, String)>, Usage> {
    parse_args(c, g, false).map(|(_, raw)| raw)
}

/// The arguments of `call` (`json_allowed`: one JSON object may be given
/// whole beside `--arg` pairs) and of `prompt` (pairs only), with the
/// output options that may stand among them.
fn parse_args(
    c: &mut Cursor,
    g: &mut Global,
    json_allowed: bool,
) -> Result<(serde_json::Value, Vec<(String, String)>), Usage> {
    let mut args = serde_json::Map::new();
    let mut raw = Vec::new();
    let mut json_given = false;
    while let Some(a) = c.peek().map(str::to_owned) {
        match a.as_str() {
            s if CONNECT_OPTIONS.contains(&s) => break,
            "--arg" => {
                c.next();
                raw.push(parse_kv(&c.value("--arg")?, "--arg")?);
            }
            "--json" => {
                c.next();
                g.json = true;
            }
            "-q" | "--quiet" => {
                c.next();
                g.quiet = true;
            }
            s if json_allowed && s.starts_with("--") => {
                return Err(Usage(format!("unknown option {s}")))
            }
            s if json_allowed && !json_given => {
                c.next();
                json_given = true;
                match serde_json::from_str::<serde_json::Value>(s) {
                    Ok(serde_json::Value::Object(m)) => args.extend(m),
                    Ok(_) => return Err(Usage("the tool arguments must be a JSON object".into())),
                    Err(e) => {
                        return Err(Usage(format!("the tool arguments are not valid JSON: {e}")))
                    }
                }
            }
            other => return Err(Usage(format!("unexpected argument {other:?}"))),
        }
    }
    Ok((serde_json::Value::Object(args), raw))
}

/// `rpc METHOD [JSON]`: the params, when given, must be a JSON object.
fn parse_rpc(c: &mut Cursor) -> Result<Verb, Usage> {
    let method = c.positional("METHOD")?;
    let params = match c.peek() {
        Some(s) if !s.starts_with("--") => {
            let s = c.next().unwrap_or_default();
            match serde_json::from_str::<serde_json::Value>(&s) {
                Ok(v @ serde_json::Value::Object(_)) => Some(v),
                Ok(_) => return Err(Usage("the params must be a JSON object".into())),
                Err(e) => return Err(Usage(format!("the params are not valid JSON: {e}"))),
            }
        }
        _ => None,
    };
    Ok(Verb::Rpc { method, params })
}

fn parse_verb(c: &mut Cursor, g: &mut Global, verb: &str) -> Result<Verb, Usage> {
    Ok(match verb {
        "tools" => Verb::Tools,
        "call" => {
            let tool = c.positional("TOOL")?;
            let (arguments, raw_args) = parse_call_args(c, g)?;
            Verb::Call {
                tool,
                arguments,
                raw_args,
            }
        }
        "prompt" => Verb::Prompt {
            name: c.positional("NAME")?,
            args: parse_string_args(c, g)?,
        },
        "rpc" => parse_rpc(c)?,
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
            let (mut api_key, mut sse, mut headers) = (None, false, Vec::new());
            loop {
                match c.peek() {
                    Some("--header") => {
                        c.next();
                        let h = c.value("--header")?;
                        match h.split_once(':') {
                            Some((k, v)) if !k.trim().is_empty() => {
                                headers.push((k.trim().to_owned(), v.trim().to_owned()))
                            }
                            _ => {
                                return Err(Usage(format!(
                                    "--header takes \"Name: value\", got {h:?}"
                                )))
                            }
                        }
                    }
                    Some("--api-key") => {
                        c.next();
                        api_key = Some(c.value("--api-key")?);
                    }
                    Some("--sse") => {
                        c.next();
                        sse = true;
                    }
                    _ => break,
                }
            }
            Ok(Some(Target::Url {
                url,
                api_key,
                sse,
                headers,
            }))
        }
        _ => Ok(None),
    }
}

/// What follows `connect VERB [ARGS]`: `--env`/`--inherit-env`, then a
/// target (`-- COMMAND`, `--url URL`, `--config FILE [--server NAME]`).
fn parse_connect(c: &mut Cursor, verb: Verb) -> Result<Cmd, Usage> {
    let (mut env, mut inherit_env, mut target) = (Vec::new(), false, None);
    let mut config: Option<(String, Option<String>)> = None;
    while let Some(a) = c.peek().map(str::to_owned) {
        match a.as_str() {
            "--env" => {
                c.next();
                env.push(parse_kv(&c.value("--env")?, "--env")?);
            }
            "--inherit-env" => {
                c.next();
                inherit_env = true;
            }
            "--config" => {
                c.next();
                let file = c.value("--config")?;
                config = Some((file, config.and_then(|(_, s)| s)));
            }
            "--server" => {
                c.next();
                let name = c.value("--server")?;
                match &mut config {
                    Some((_, s)) => *s = Some(name),
                    None => return Err(Usage("--server goes with --config FILE".into())),
                }
            }
            "--" | "--url" if target.is_none() && config.is_none() => {
                target = parse_target(c)?;
            }
            other => return Err(Usage(format!("unexpected argument {other:?} to connect"))),
        }
    }
    let target =
        match (target, config) {
            (Some(_), Some(_)) => {
                return Err(Usage(
                    "connect takes one of `-- COMMAND`, `--url URL` and `--config FILE`".into(),
                ))
            }
            (Some(t), None) => t,
            (None, Some((file, server))) => Target::Config { file, server },
            (None, None) => return Err(Usage(
                "connect needs `-- COMMAND ARGS...`, `--url URL` or `--config FILE` after the verb"
                    .into(),
            )),
        };
    if (inherit_env || !env.is_empty()) && matches!(target, Target::Url { .. }) {
        return Err(Usage(
            "--env and --inherit-env apply to stdio servers, not --url".into(),
        ));
    }
    Ok(Cmd::Connect {
        target,
        verb,
        env,
        inherit_env,
    })
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
            Some("-q" | "--quiet") => {
                c.next();
                g.quiet = true;
            }
            Some("--log-level") => {
                c.next();
                let v = c.value("--log-level")?;
                g.log_level = Some(skald_mcp::LogLevel::parse(&v).ok_or_else(|| {
                    Usage(format!(
                        "--log-level takes an MCP level (debug, info, notice, warning, error, \
                         critical, alert, emergency), got {v:?}"
                    ))
                })?);
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
        "import" => {
            let file = c.positional("FILE")?;
            let replace = c.peek() == Some("--replace");
            if replace {
                c.next();
            }
            Cmd::Import { file, replace }
        }
        "call" | "resources" | "read" | "prompts" | "prompt" | "ping" | "rpc" => {
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
            parse_connect(&mut c, verb)?
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
            verb:
                Verb::Call {
                    arguments,
                    raw_args,
                    ..
                },
            ..
        } = c
        else {
            panic!()
        };
        assert_eq!(arguments, serde_json::json!({"text": "hi"}));
        assert_eq!(raw_args, [("n".to_owned(), "5".to_owned())]);
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
    fn connect_options() {
        let Cmd::Connect {
            target: Target::Command(cmd),
            env,
            inherit_env,
            verb: Verb::Call { raw_args, .. },
        } = p(&[
            "connect",
            "call",
            "t",
            "--arg",
            "a=1",
            "--env",
            "K=V",
            "--inherit-env",
            "--",
            "npx",
            "-y",
            "x",
        ])
        .unwrap()
        .1
        else {
            panic!()
        };
        assert_eq!(cmd, ["npx", "-y", "x"]);
        assert_eq!(env, [("K".to_owned(), "V".to_owned())]);
        assert!(inherit_env);
        assert_eq!(raw_args.len(), 1);
        assert!(matches!(
            p(&["connect", "tools", "--config", "f.json", "--server", "fs"]).unwrap().1,
            Cmd::Connect { target: Target::Config { file, server: Some(s) }, .. } if file == "f.json" && s == "fs"
        ));
        assert!(matches!(
            p(&["connect", "ping", "--url", "http://h/sse", "--sse"])
                .unwrap()
                .1,
            Cmd::Connect {
                target: Target::Url { sse: true, .. },
                ..
            }
        ));
        assert!(matches!(
            p(&["rpc", "s", "resources/list", "{}"]).unwrap().1,
            Cmd::OnServer {
                verb: Verb::Rpc {
                    params: Some(_),
                    ..
                },
                ..
            }
        ));
        assert!(matches!(
            p(&["prompt", "s", "greet", "--arg", "name=x"]).unwrap().1,
            Cmd::OnServer { verb: Verb::Prompt { args, .. }, .. } if args.len() == 1
        ));
        for bad in [
            &["connect", "tools", "--url", "http://x", "--env", "A=1"][..],
            &["connect", "tools", "--server", "x"],
            &["connect", "tools", "--config", "f", "--", "cmd"],
            &["rpc", "s", "m", "[1]"],
            &["import"],
        ] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn args_are_typed_from_the_schema() {
        use serde_json::json;
        let schema = json!({"type": "object", "properties": {
            "query": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
            "flag": {"type": "boolean"}, "tags": {"type": "array"}, "opt": {"type": ["string", "null"]},
            "mode": {"enum": ["a", "b"]}, "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        }});
        let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
        let mut m = serde_json::Map::new();
        type_args(
            Some(&schema),
            &[
                kv("query", "123"),
                kv("n", "5"),
                kv("x", "2.5"),
                kv("flag", "true"),
                kv("tags", "[1,2]"),
                kv("opt", "null"),
                kv("mode", "true"),
                kv("either", "7"),
                kv("free", "{\"a\":1}"),
                kv("word", "hello"),
            ],
            &mut m,
        )
        .unwrap();
        assert_eq!(
            serde_json::Value::Object(m),
            json!({"query": "123", "n": 5, "x": 2.5, "flag": true, "tags": [1, 2], "opt": null,
                   "mode": "true", "either": "7", "free": {"a": 1}, "word": "hello"})
        );
        for (k, v) in [("n", "five"), ("n", "2.5"), ("flag", "yes"), ("tags", "x")] {
            let e = type_args(Some(&schema), &[kv(k, v)], &mut serde_json::Map::new()).unwrap_err();
            assert!(e.0.contains(&format!("--arg {k}")), "{}", e.0);
        }
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
