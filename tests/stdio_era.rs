//! Era detection and the modern era (MCP 2026-07-28) over stdio, against
//! the bundled demo server in its three modes: legacy-only (answering the
//! `server/discover` probe with -32601, -32602, garbage, or not at all),
//! modern-only and dual-era; then what the seed describes, in the modern
//! era: notifications, logs, progress, cancellation, media, list-changed
//! refreshes (on `subscriptions/listen`), the result cache, and the era
//! kept with the server's row by the manager.

mod common;

use std::time::{Duration, Instant};

use common::*;
use crossbeam_channel::unbounded;
use serde_json::{json, Value};
use skald_mcp::manager::{ManagerConfig, McpManager};
use skald_mcp::{
    CallOptions, CancelToken, ClientOptions, ElicitationRequest, ElicitationResponse, Era,
    EraPreference, LogLevel, LogTag, McpCallResult, McpError, McpMedia, McpServer, McpServerClient,
    McpServerConfig,
};

fn demo_in(era: &str, env: &[(&str, &str)]) -> McpServerConfig {
    let mut cfg = script_config(
        &format!("demo-{era}"),
        "demo_mcp_server.py",
        &["--era", era],
    );
    for (k, v) in env {
        cfg = cfg.with_env(*k, *v);
    }
    cfg
}

fn connect(cfg: &McpServerConfig, opts: ClientOptions) -> skald_mcp::Result<McpServer> {
    McpServer::connect(cfg, opts)
}

/// One cell of the matrix: the server's era and environment, the client's
/// preference, and the era expected (`None`: the connect must fail).
type Cell = (
    &'static str,
    &'static [(&'static str, &'static str)],
    EraPreference,
    Option<Era>,
);

/// A dual-era client meets every kind of server it can meet.
#[test]
fn compatibility_matrix_on_stdio() {
    let cells: &[Cell] = &[
        ("dual", &[], EraPreference::Auto, Some(Era::Modern)),
        ("dual", &[], EraPreference::Legacy, Some(Era::Legacy)),
        ("dual", &[], EraPreference::Modern, Some(Era::Modern)),
        ("modern", &[], EraPreference::Auto, Some(Era::Modern)),
        ("modern", &[], EraPreference::Legacy, None),
        ("legacy", &[], EraPreference::Auto, Some(Era::Legacy)),
        (
            "legacy",
            &[("DEMO_PROBE", "invalid")],
            EraPreference::Auto,
            Some(Era::Legacy),
        ),
        (
            "legacy",
            &[("DEMO_PROBE", "garbage")],
            EraPreference::Auto,
            Some(Era::Legacy),
        ),
        (
            "legacy",
            &[("DEMO_PROBE", "ignore")],
            EraPreference::Auto,
            Some(Era::Legacy),
        ),
        ("legacy", &[], EraPreference::Modern, None),
    ];
    for (server, env, pref, want) in cells {
        let cfg = demo_in(server, env);
        // A short probe timeout only where the probe goes unanswered: a
        // server that answers slower than it (a cold Python start on a busy
        // machine) is also sent `initialize`, which the assertions below
        // would count.
        let ignored = env.iter().any(|(_, v)| *v == "ignore");
        let probe = if ignored { 300 } else { 5_000 };
        let opts = test_options()
            .era(*pref)
            .discover_timeout(Duration::from_millis(probe));
        let what = format!("{server} server {env:?}, client {pref:?}");
        match (want, connect(&cfg, opts)) {
            (Some(era), Ok(s)) => {
                let info = s.initialize().unwrap();
                assert_eq!(info.era, *era, "{what}");
                assert_eq!(
                    info.protocol_version,
                    if *era == Era::Modern {
                        "2026-07-28"
                    } else {
                        "2025-11-25"
                    },
                    "{what}"
                );
                assert_eq!(info.server_info.name, "demo", "{what}");
                assert_eq!(
                    text(s.call_tool("echo", json!({"text": "hi"})).unwrap()),
                    "hi",
                    "{what}"
                );
                // Exactly one handshake in the legacy era, none in the modern.
                let inits = received(&s)
                    .iter()
                    .filter(|m| m["method"] == "initialize")
                    .count();
                assert_eq!(inits, usize::from(*era == Era::Legacy), "{what}");
                s.close().unwrap();
            }
            (None, Err(e)) => {
                // A forced era the server does not speak: a clear error that
                // says so, never a silent fallback.
                let shown = e.to_string();
                assert!(
                    shown.contains("2026-07-28") || shown.contains("modern"),
                    "{what}: {shown}"
                );
            }
            (want, got) => panic!("{what}: wanted {want:?}, got {got:?}"),
        }
    }
}

/// A legacy server that ignores the probe costs the discover timeout, no
/// more; the late fallback still lands in the legacy era.
#[test]
fn silent_legacy_server_falls_back_after_the_probe_timeout() {
    let (ltx, lrx) = unbounded();
    // A configuration of its own: the era found for a configuration is
    // remembered in the process, and the matrix test starts this server too.
    let cfg = demo_in(
        "legacy",
        &[("DEMO_PROBE", "ignore"), ("DEMO_CASE", "silent-fallback")],
    );
    let opts = test_options()
        .discover_timeout(Duration::from_millis(200))
        .logs(ltx);
    let s = connect(&cfg, opts).unwrap();
    assert_eq!(s.initialize().unwrap().era, Era::Legacy);
    let lines: Vec<String> = lrx.try_iter().map(|l| l.text).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("no answer to server/discover")),
        "{lines:?}"
    );
    // The probe and the handshake both reached the server, in that order.
    let msgs = received(&s);
    let methods: Vec<&str> = msgs.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        &methods[..3],
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

/// An unknown version is refused with -32022; the client retries once with
/// a version from the server's list.
#[test]
fn unsupported_version_is_retried_with_a_supported_one() {
    let (ltx, lrx) = unbounded();
    let cfg = demo_in("modern", &[]);
    let s = connect(
        &cfg,
        test_options().protocol_version("2099-01-01").logs(ltx),
    )
    .unwrap();
    let info = s.initialize().unwrap();
    assert_eq!(
        (info.era, info.protocol_version.as_str()),
        (Era::Modern, "2026-07-28")
    );
    assert!(lrx
        .try_iter()
        .any(|l| l.text.contains("does not support protocol 2099-01-01")));
}

/// Every modern request carries the version, capabilities, identity and
/// log level in `_meta`; nothing of the legacy era is sent.
#[test]
fn modern_requests_carry_meta() {
    let s = connect(&demo_in("modern", &[]), test_options()).unwrap();
    s.list_tools().unwrap();
    s.call_tool("echo", json!({"text": "x"})).unwrap();
    s.set_logging_level(LogLevel::Warning).unwrap();
    s.ping().unwrap();
    let msgs = received(&s);
    for m in msgs.iter().filter(|m| m.get("id").is_some()) {
        let meta = &m["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{m}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
            "{m}"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "skald-mcp",
            "{m}"
        );
    }
    for gone in [
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "ping",
    ] {
        assert!(msgs.iter().all(|m| m["method"] != gone), "{gone} was sent");
    }
    // The level set is in the requests after it (debug before, the default).
    let levels: Vec<&str> = msgs
        .iter()
        .filter_map(|m| m["params"]["_meta"]["io.modelcontextprotocol/logLevel"].as_str())
        .collect();
    assert_eq!(levels.first(), Some(&"debug"));
    assert_eq!(levels.last(), Some(&"warning"));
}

/// Notifications, logs, progress, media and cancellation work the same in
/// the modern era.
#[test]
fn seed_features_in_the_modern_era() {
    let (ntx, nrx) = unbounded();
    let (ltx, lrx) = unbounded();
    let s = connect(
        &demo_in("modern", &[]),
        test_options().notifications(ntx).logs(ltx),
    )
    .unwrap();
    assert_eq!(s.initialize().unwrap().era, Era::Modern);

    // A pushed notification reaches the channel (and from there mcp_events).
    s.call_tool(
        "notify",
        json!({"method": "event/demo", "params": {"n": 1}}),
    )
    .unwrap();
    let n = nrx
        .recv_timeout(Duration::from_secs(10))
        .expect("the notification arrives");
    assert_eq!(
        (n.method.as_str(), &n.params),
        ("event/demo", &json!({"n": 1}))
    );

    // notifications/message reaches the log channel at its level.
    s.call_tool("log", json!({"level": "warning", "message": "modern log"}))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let l = lrx.recv_deadline(deadline).expect("the log line arrives");
        if l.text.contains("modern log") && l.tag != LogTag::Stderr {
            assert_eq!(l.tag, LogTag::Level(LogLevel::Warning));
            break;
        }
    }

    // Progress.
    let (ptx, prx) = unbounded();
    s.call_tool_with(
        "progress",
        json!({"steps": 3}),
        &CallOptions::new().progress_channel(ptx),
    )
    .unwrap();
    let p: Vec<f64> = prx.try_iter().map(|p| p.progress).collect();
    assert_eq!(p, [1.0, 2.0, 3.0]);

    // Media.
    let McpCallResult::Media { items, .. } = s.call_tool("image", json!({})).unwrap() else {
        panic!("expected media")
    };
    assert!(items
        .iter()
        .any(|m| matches!(m, McpMedia::Image { data, .. } if data.starts_with(b"\x89PNG"))));

    // Cancellation: notifications/cancelled, and the connection stays usable.
    // (Tripped before the call: the request is sent, then abandoned at once.)
    let token = CancelToken::new();
    token.cancel_with("enough");
    let e = s
        .call_tool_with(
            "slow",
            json!({"seconds": 30}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    assert!(matches!(e, McpError::Cancelled { .. }), "{e:?}");
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "after"})).unwrap()),
        "after"
    );
    let msgs = received(&s);
    assert!(msgs
        .iter()
        .any(|m| m["method"] == "notifications/cancelled" && m["params"]["reason"] == "enough"));
    s.close().unwrap();
}

/// list_changed arrives on the client's own `subscriptions/listen` stream,
/// invalidates the cache and refreshes the tool list.
#[test]
fn list_changed_over_subscriptions_listen() {
    let (ntx, nrx) = unbounded();
    let s = connect(
        &demo_in("modern", &[("DEMO_TTL_MS", "600000")]),
        test_options().notifications(ntx),
    )
    .unwrap();
    let before = s.list_tools().unwrap();
    // Served from the cache within its ttlMs: no second round of pages.
    let again = s.list_tools().unwrap();
    assert_eq!(before.len(), again.len());
    let pages = |s: &McpServer| {
        received(s)
            .iter()
            .filter(|m| m["method"] == "tools/list")
            .count()
    };
    let first = pages(&s);
    assert!(first > 0);
    s.list_tools().unwrap();
    assert_eq!(pages(&s), first, "a fresh cached list was fetched again");
    // The stream was opened with the filter the capabilities allow.
    let listens: Vec<Value> = received(&s)
        .into_iter()
        .filter(|m| m["method"] == "subscriptions/listen")
        .collect();
    assert_eq!(listens.len(), 1, "{listens:?}");
    assert_eq!(
        listens[0]["params"]["notifications"]["toolsListChanged"],
        true
    );

    s.call_tool("register_tool", json!({"name": "late"}))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = nrx.recv_deadline(deadline).expect("list_changed arrives");
        if n.method == "notifications/tools/list_changed" {
            // Tagged with the id of the listen request.
            assert_eq!(
                n.params["_meta"]["io.modelcontextprotocol/subscriptionId"],
                listens[0]["id"]
            );
            break;
        }
    }
    // The notification invalidated the cached list: the next one is fresh.
    let after = s.list_tools().unwrap();
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.iter().any(|t| t.name == "late"));
    s.close().unwrap();
}

/// The manager keeps the era with the server's row and shows it.
#[test]
fn manager_records_and_shows_the_era() {
    let dir = std::env::temp_dir().join(format!("skald-era-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = ManagerConfig::in_dir(&dir);
    config.client = test_options();
    let m = McpManager::open(config).unwrap();
    m.register(script_config(
        "mod",
        "demo_mcp_server.py",
        &["--era", "modern"],
    ))
    .unwrap();
    m.register(script_config(
        "leg",
        "demo_mcp_server.py",
        &["--era", "legacy"],
    ))
    .unwrap();
    let listed = m.list().unwrap();
    let era_of = |n: &str| {
        let i = listed.iter().find(|s| s.name == n).unwrap();
        (i.era, i.protocol_version.clone())
    };
    assert_eq!(
        era_of("mod"),
        (Some(Era::Modern), Some("2026-07-28".into()))
    );
    assert_eq!(
        era_of("leg"),
        (Some(Era::Legacy), Some("2025-11-25".into()))
    );
    assert_eq!(
        m.store().server_era("mod").unwrap(),
        Some((Era::Modern, Some("2026-07-28".into())))
    );
    let json = listed.iter().find(|s| s.name == "leg").unwrap().to_json();
    assert_eq!(json["era"], "legacy");
    m.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The modern errors are typed and say what the server said.
#[test]
fn modern_errors_are_typed() {
    let s = connect(&demo_in("modern", &[]), test_options()).unwrap();
    match s.call_tool("modern_error", json!({"code": -32020})) {
        Err(McpError::HeaderMismatch {
            method, message, ..
        }) => {
            assert_eq!(method, "tools/call");
            assert!(message.contains("Mcp-Name"), "{message}");
        }
        other => panic!("expected HeaderMismatch, got {other:?}"),
    }
    match s.call_tool("modern_error", json!({"code": -32021})) {
        Err(e @ McpError::MissingClientCapability { .. }) => {
            let McpError::MissingClientCapability { detail, .. } = &e else {
                unreachable!()
            };
            assert_eq!(detail.0, json!({"elicitation": {}}));
            assert!(e.to_string().contains("elicitation"), "{e}");
        }
        other => panic!("expected MissingClientCapability, got {other:?}"),
    }
    // -32022 naming only versions this client does not speak: retried
    // once (there is nothing to retry with), then a typed error.
    match s.call_tool("modern_error", json!({"code": -32022})) {
        Err(McpError::UnsupportedProtocolVersion { detail, .. }) => {
            assert_eq!(detail.supported, ["2099-01-01"]);
        }
        other => panic!("expected UnsupportedProtocolVersion, got {other:?}"),
    }
    // The connection is still usable.
    assert_eq!(
        text(s.call_tool("echo", json!({"text": "ok"})).unwrap()),
        "ok"
    );
}

/// Multi round-trip: the server's elicitation reaches the same handler as
/// in the legacy era; the request is sent again with a new id, the answer
/// and the server's state. Without a handler: a clear typed error.
#[test]
fn input_required_reaches_the_elicitation_handler() {
    let opts = test_options().elicitation_handler(|req: &ElicitationRequest| {
        assert_eq!(req.message, "Proceed?");
        let mut m = serde_json::Map::new();
        m.insert("ok".into(), json!(true));
        ElicitationResponse::Accept(m)
    });
    let s = connect(&demo_in("modern", &[]), opts).unwrap();
    assert_eq!(
        text(s.call_tool("confirm", json!({})).unwrap()),
        r#"confirmed: accept {"ok": true}"#
    );
    let calls: Vec<Value> = received(&s)
        .into_iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == "confirm")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert!(calls[0]["params"].get("inputResponses").is_none());
    assert_eq!(calls[1]["params"]["requestState"], "state-1");
    assert_eq!(
        calls[1]["params"]["inputResponses"]["c"]["action"],
        "accept"
    );
    // The capability is declared per request, since a handler is installed.
    assert!(
        calls[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"]
            .is_object()
    );

    let s = connect(&demo_in("modern", &[]), test_options()).unwrap();
    match s.call_tool("confirm", json!({})) {
        Err(McpError::InputRequired { requests, .. }) => {
            assert_eq!(requests, ["elicitation/create"])
        }
        other => panic!("expected InputRequired, got {other:?}"),
    }
}

/// The era `Auto` found for a stdio configuration is remembered for the
/// process: the next start of the same command opens with `initialize`, no
/// probe. A pinned era is not remembered (the same dual-era server met in
/// `Legacy` first is still met in the modern era by `Auto`).
#[test]
fn the_era_found_is_remembered_per_configuration() {
    let methods = |s: &McpServer| -> Vec<String> {
        received(s)
            .iter()
            .filter_map(|m| m["method"].as_str().map(str::to_owned))
            .collect()
    };
    let legacy = demo_in("legacy", &[("DEMO_CASE", "remembered")]);
    let first = connect(&legacy, test_options()).unwrap();
    assert_eq!(first.initialize().unwrap().era, Era::Legacy);
    assert_eq!(methods(&first)[0], "server/discover");
    first.close().unwrap();
    let second = connect(&legacy, test_options()).unwrap();
    assert_eq!(second.initialize().unwrap().era, Era::Legacy);
    let seen = methods(&second);
    assert_eq!(seen[0], "initialize", "{seen:?}");
    assert!(!seen.iter().any(|m| m == "server/discover"), "{seen:?}");
    second.close().unwrap();

    let dual = demo_in("dual", &[("DEMO_CASE", "pinned")]);
    let pinned = connect(&dual, test_options().era(EraPreference::Legacy)).unwrap();
    assert_eq!(pinned.initialize().unwrap().era, Era::Legacy);
    pinned.close().unwrap();
    let auto = connect(&dual, test_options()).unwrap();
    assert_eq!(auto.initialize().unwrap().era, Era::Modern);
}

/// A remembered era that turns out wrong is probed again, both ways.
#[test]
fn a_wrong_era_hint_is_probed_again() {
    let mut opts = test_options();
    opts.era_hint = Some(Era::Legacy);
    let s = connect(&demo_in("modern", &[]), opts).unwrap();
    assert_eq!(s.initialize().unwrap().era, Era::Modern);
    let mut opts = test_options();
    opts.era_hint = Some(Era::Modern);
    let s = connect(&demo_in("legacy", &[]), opts).unwrap();
    assert_eq!(s.initialize().unwrap().era, Era::Legacy);
}

/// Several input requests in one round are answered together (each by its
/// handler, in parallel); a call cancelled while a handler ran is not sent
/// again.
#[test]
fn input_rounds_answer_every_request_and_honour_cancellation() {
    let opts = test_options()
        .elicitation_handler(|_: &ElicitationRequest| {
            let mut m = serde_json::Map::new();
            m.insert("ok".into(), json!(true));
            ElicitationResponse::Accept(m)
        })
        .roots_provider(vec![skald_mcp::Root::new("file:///w", "w")]);
    let s = connect(&demo_in("modern", &[]), opts).unwrap();
    assert_eq!(
        text(s.call_tool("confirm", json!({"with_roots": true})).unwrap()),
        r#"confirmed: accept {"ok": true} roots: file:///w"#
    );

    let token = CancelToken::new();
    let t = token.clone();
    let opts = test_options().elicitation_handler(move |_: &ElicitationRequest| {
        // The user gives up while the question is on screen.
        t.cancel_with("changed my mind");
        ElicitationResponse::Decline
    });
    let s = connect(&demo_in("modern", &[]), opts).unwrap();
    let e = s
        .call_tool_with(
            "confirm",
            json!({}),
            &CallOptions::new().cancel_token(token),
        )
        .unwrap_err();
    assert!(
        matches!(&e, McpError::Cancelled { reason, .. } if reason == "changed my mind"),
        "{e:?}"
    );
    let rounds = received(&s)
        .iter()
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == "confirm")
        .count();
    assert_eq!(rounds, 1, "the cancelled call was sent again");
}
