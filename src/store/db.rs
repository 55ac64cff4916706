//! The SQL the store thread runs. Write functions expect to be called inside
//! a transaction the caller commits.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::Value;

use crate::config::{McpServerConfig, McpTransport};
use crate::error::{McpError, Result};
use crate::notification::McpNotification;

use super::commands::GrantTable;
use super::timestamp::{format_utc_millis, parse_utc, push_utc_millis, unix_millis};
use super::{EventId, EventStatus, StoredEvent};

/// Maps an SQLite error to [`McpError::Store`] with `context`.
pub(crate) fn sql_err(context: &'static str) -> impl FnOnce(rusqlite::Error) -> McpError {
    move |e| McpError::Store {
        context: context.into(),
        message: e.to_string(),
        source: Some(Box::new(e)),
    }
}

fn store_err(context: &str, message: String) -> McpError {
    McpError::Store {
        context: context.into(),
        message,
        source: None,
    }
}

/// An event waiting in the current batch.
pub(crate) struct PendingEvent {
    pub event: McpNotification,
    pub received_at: SystemTime,
}

/// Inserts the `events` that `admit` accepts, in order; returns, in the
/// same order, the id of each inserted event and `None` for each refused
/// one. `admit` sees each event with its payload size (method plus params
/// JSON, in bytes), after serialization and before the insert.
pub(crate) fn insert_events<'a>(
    conn: &Connection,
    events: impl Iterator<Item = &'a PendingEvent>,
    mut admit: impl FnMut(&McpNotification, u64) -> bool,
) -> rusqlite::Result<Vec<Option<EventId>>> {
    let mut st = conn.prepare_cached(
        "INSERT INTO mcp_events (server, method, params, received_at) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut ids = Vec::new();
    // Both buffers live for the whole batch: no allocation per event, and
    // the events of one millisecond (about a hundred at full speed) share
    // one formatted timestamp.
    let mut params_buf: Vec<u8> = Vec::with_capacity(256);
    let mut time_buf = String::with_capacity(24);
    let mut time_of_buf = None;
    for p in events {
        params_buf.clear();
        // Serializing a `Value` cannot fail (its map keys are strings), and
        // its output is UTF-8.
        if serde_json::to_writer(&mut params_buf, &p.event.params).is_err() {
            params_buf.clear();
            params_buf.extend_from_slice(b"null");
        }
        let params_json = std::str::from_utf8(&params_buf).unwrap_or("null");
        let bytes = (p.event.method.len() + params_json.len()) as u64;
        if !admit(&p.event, bytes) {
            ids.push(None);
            continue;
        }
        let millis = unix_millis(p.received_at);
        if time_of_buf != Some(millis) {
            time_buf.clear();
            push_utc_millis(&mut time_buf, p.received_at);
            time_of_buf = Some(millis);
        }
        let id = st.insert(params![
            p.event.server,
            p.event.method,
            params_json,
            time_buf
        ])?;
        ids.push(Some(EventId(id)));
    }
    Ok(ids)
}

const EVENT_COLUMNS: &str = "id, server, method, params, received_at, status, processed_at";

type RawEvent = (i64, String, String, String, String, String, Option<String>);

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<RawEvent> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn decode_event(raw: RawEvent) -> Result<StoredEvent> {
    let (id, server, method, params, received_at, status, processed_at) = raw;
    let ctx = "reading events";
    let params: Value = serde_json::from_str(&params)
        .map_err(|e| store_err(ctx, format!("event {id}: invalid params JSON: {e}")))?;
    let time = |s: &str| {
        parse_utc(s).ok_or_else(|| store_err(ctx, format!("event {id}: invalid timestamp {s:?}")))
    };
    let status = match status.as_str() {
        "pending" => EventStatus::Pending,
        "processed" => EventStatus::Processed,
        other => {
            return Err(store_err(
                ctx,
                format!("event {id}: invalid status {other:?}"),
            ))
        }
    };
    Ok(StoredEvent {
        id: EventId(id),
        server,
        method,
        params,
        received_at: time(&received_at)?,
        status,
        processed_at: processed_at.as_deref().map(time).transpose()?,
    })
}

/// Runs an event query whose only parameter is a row limit.
fn query_events(
    conn: &Connection,
    ctx: &'static str,
    sql: &str,
    limit: usize,
) -> Result<Vec<StoredEvent>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut st = conn.prepare_cached(sql).map_err(sql_err(ctx))?;
    let raws = st
        .query_map([limit], event_from_row)
        .map_err(sql_err(ctx))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_err(ctx))?;
    raws.into_iter().map(decode_event).collect()
}

/// The oldest `limit` pending events, by id.
pub(crate) fn pending_events(conn: &Connection, limit: usize) -> Result<Vec<StoredEvent>> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM mcp_events WHERE status = 'pending' ORDER BY id LIMIT ?1"
    );
    query_events(conn, "reading pending events", &sql, limit)
}

/// The newest `limit` events of any status, oldest first.
pub(crate) fn recent_events(conn: &Connection, limit: usize) -> Result<Vec<StoredEvent>> {
    let sql = format!(
        "SELECT * FROM (SELECT {EVENT_COLUMNS} FROM mcp_events ORDER BY id DESC LIMIT ?1) ORDER BY id"
    );
    query_events(conn, "reading recent events", &sql, limit)
}

/// One event by id, whatever its status.
pub(crate) fn get_event(conn: &Connection, id: EventId) -> Result<Option<StoredEvent>> {
    let ctx = "reading an event";
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} FROM mcp_events WHERE id = ?1"
        ))
        .map_err(sql_err(ctx))?
        .query_row([id.0], event_from_row)
        .optional()
        .map_err(sql_err(ctx))?;
    raw.map(decode_event).transpose()
}

/// Marks the pending events among `ids` processed; calls `marked` with the
/// server and payload size of each one that changed, and returns how many
/// did.
pub(crate) fn mark_processed(
    conn: &Connection,
    ids: &[EventId],
    now: SystemTime,
    mut marked: impl FnMut(&str, u64),
) -> rusqlite::Result<usize> {
    let now = format_utc_millis(now);
    let mut st = conn.prepare_cached(
        "UPDATE mcp_events SET status = 'processed', processed_at = ?2 \
         WHERE id = ?1 AND status = 'pending' \
         RETURNING server, octet_length(method) + octet_length(params)",
    )?;
    let mut n = 0;
    for id in ids {
        let row = st
            .query_row(params![id.0, now], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .optional()?;
        if let Some((server, bytes)) = row {
            marked(&server, bytes.max(0) as u64);
            n += 1;
        }
    }
    Ok(n)
}

/// Inserts or replaces the row of `cfg.name`, keeping its `created_at`.
pub(crate) fn upsert_server(
    conn: &Connection,
    cfg: &McpServerConfig,
    now: SystemTime,
) -> Result<()> {
    let ctx = "saving a server";
    let args = serde_json::to_string(&cfg.args).map_err(|e| store_err(ctx, e.to_string()))?;
    let env = serde_json::to_string(&cfg.env).map_err(|e| store_err(ctx, e.to_string()))?;
    let headers = serde_json::to_string(&cfg.headers).map_err(|e| store_err(ctx, e.to_string()))?;
    let cwd = match &cfg.cwd {
        None => None,
        Some(p) => Some(p.to_str().ok_or_else(|| McpError::Config {
            server: cfg.name.clone(),
            message: "'cwd' is not valid UTF-8".into(),
        })?),
    };
    let now = format_utc_millis(now);
    conn.prepare_cached(
        "INSERT INTO mcp_servers (name, transport, command, args, env, cwd, url, api_key, \
             description, friendly_name, enabled, created_at, updated_at, inherit_env, headers) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13, ?14) \
         ON CONFLICT (name) DO UPDATE SET transport = excluded.transport, \
             command = excluded.command, args = excluded.args, env = excluded.env, \
             cwd = excluded.cwd, url = excluded.url, api_key = excluded.api_key, \
             description = excluded.description, friendly_name = excluded.friendly_name, \
             enabled = excluded.enabled, updated_at = excluded.updated_at, \
             inherit_env = excluded.inherit_env, headers = excluded.headers",
    )
    .and_then(|mut st| {
        st.execute(params![
            cfg.name,
            cfg.transport.as_str(),
            cfg.command,
            args,
            env,
            cwd,
            cfg.url,
            cfg.api_key,
            cfg.description,
            cfg.friendly_name,
            cfg.enabled,
            now,
            cfg.inherit_env,
            headers
        ])
    })
    .map_err(sql_err(ctx))?;
    Ok(())
}

const SERVER_COLUMNS: &str = "name, transport, command, args, env, cwd, url, api_key, \
                              description, friendly_name, enabled, inherit_env, headers";

type RawServer = (
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    bool,
    bool,
    String,
);

fn server_from_row(r: &Row<'_>) -> rusqlite::Result<RawServer> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        r.get(7)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
        r.get(12)?,
    ))
}

fn decode_server(raw: RawServer) -> Result<McpServerConfig> {
    let (
        name,
        transport,
        command,
        args,
        env,
        cwd,
        url,
        api_key,
        description,
        friendly_name,
        enabled,
        inherit_env,
        headers,
    ) = raw;
    let ctx = "reading servers";
    let transport = McpTransport::parse(&transport).ok_or_else(|| {
        store_err(
            ctx,
            format!("server {name:?}: invalid transport {transport:?}"),
        )
    })?;
    let args: Vec<String> = serde_json::from_str(&args)
        .map_err(|e| store_err(ctx, format!("server {name:?}: invalid args JSON: {e}")))?;
    let env: BTreeMap<String, String> = serde_json::from_str(&env)
        .map_err(|e| store_err(ctx, format!("server {name:?}: invalid env JSON: {e}")))?;
    let headers: BTreeMap<String, String> = serde_json::from_str(&headers)
        .map_err(|e| store_err(ctx, format!("server {name:?}: invalid headers JSON: {e}")))?;
    Ok(McpServerConfig {
        name,
        transport,
        command,
        args,
        env,
        inherit_env,
        cwd: cwd.map(PathBuf::from),
        url,
        api_key,
        headers,
        description,
        friendly_name,
        enabled,
    })
}

/// The server named `name`, if any.
pub(crate) fn get_server(conn: &Connection, name: &str) -> Result<Option<McpServerConfig>> {
    let ctx = "reading a server";
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {SERVER_COLUMNS} FROM mcp_servers WHERE name = ?1"
        ))
        .map_err(sql_err(ctx))?
        .query_row([name], server_from_row)
        .optional()
        .map_err(sql_err(ctx))?;
    raw.map(decode_server).transpose()
}

/// Every server, by name.
pub(crate) fn list_servers(conn: &Connection) -> Result<Vec<McpServerConfig>> {
    let ctx = "listing servers";
    let mut st = conn
        .prepare_cached(&format!(
            "SELECT {SERVER_COLUMNS} FROM mcp_servers ORDER BY name"
        ))
        .map_err(sql_err(ctx))?;
    let raws = st
        .query_map([], server_from_row)
        .map_err(sql_err(ctx))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_err(ctx))?;
    raws.into_iter().map(decode_server).collect()
}

/// Deletes the server row; true if there was one.
pub(crate) fn delete_server(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM mcp_servers WHERE name = ?1")?
        .execute([name])?
        > 0)
}

/// Sets the `enabled` flag; true if the server exists.
pub(crate) fn set_enabled(
    conn: &Connection,
    name: &str,
    enabled: bool,
    now: SystemTime,
) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE mcp_servers SET enabled = ?2, updated_at = ?3 WHERE name = ?1")?
        .execute(params![name, enabled, format_utc_millis(now)])?
        > 0)
}

/// Records the era and protocol version `name` was found to speak; true if
/// the server has a row.
pub(crate) fn set_server_era(
    conn: &Connection,
    name: &str,
    era: &str,
    protocol_version: &str,
) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE mcp_servers SET era = ?2, protocol_version = ?3 WHERE name = ?1 \
             AND (era IS NOT ?2 OR protocol_version IS NOT ?3)",
        )?
        .execute(params![name, era, protocol_version])?
        > 0
        || conn
            .prepare_cached("SELECT 1 FROM mcp_servers WHERE name = ?1")?
            .exists([name])?)
}

/// The era and protocol version recorded for `name`, if any.
pub(crate) fn server_era(
    conn: &Connection,
    name: &str,
) -> rusqlite::Result<Option<(String, Option<String>)>> {
    conn.prepare_cached("SELECT era, protocol_version FROM mcp_servers WHERE name = ?1")?
        .query_row([name], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<String>>(1)?,
            ))
        })
        .optional()
        .map(|row| row.and_then(|(era, v)| era.map(|e| (e, v))))
}

/// Records the HTTP transport (`http` or `sse`) `name` was found to speak;
/// true if the server has a row.
pub(crate) fn set_server_wire(conn: &Connection, name: &str, wire: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE mcp_servers SET wire = ?2 WHERE name = ?1 AND wire IS NOT ?2")?
        .execute(params![name, wire])?
        > 0
        || conn
            .prepare_cached("SELECT 1 FROM mcp_servers WHERE name = ?1")?
            .exists([name])?)
}

/// The HTTP transport recorded for `name`, if any.
pub(crate) fn server_wire(conn: &Connection, name: &str) -> rusqlite::Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT wire FROM mcp_servers WHERE name = ?1")?
        .query_row([name], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

impl GrantTable {
    fn table(self) -> &'static str {
        match self {
            GrantTable::Session => "session_mcp_grants",
            GrantTable::Stack => "stack_mcp_grants",
        }
    }

    fn key(self) -> &'static str {
        match self {
            GrantTable::Session => "session_id",
            GrantTable::Stack => "stack_id",
        }
    }
}

/// Records a grant; true if it is new (granting twice is not an error).
pub(crate) fn grant(
    conn: &Connection,
    scope: GrantTable,
    owner: &str,
    group: &str,
    now: SystemTime,
) -> rusqlite::Result<bool> {
    let sql = format!(
        "INSERT INTO {} ({}, group_name, granted_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT DO NOTHING",
        scope.table(),
        scope.key()
    );
    Ok(conn
        .prepare_cached(&sql)?
        .execute(params![owner, group, format_utc_millis(now)])?
        > 0)
}

/// Removes one grant; true if it existed.
pub(crate) fn revoke(
    conn: &Connection,
    scope: GrantTable,
    owner: &str,
    group: &str,
) -> rusqlite::Result<bool> {
    let sql = format!(
        "DELETE FROM {} WHERE {} = ?1 AND group_name = ?2",
        scope.table(),
        scope.key()
    );
    Ok(conn.prepare_cached(&sql)?.execute(params![owner, group])? > 0)
}

/// The groups granted to `owner`, sorted by name.
pub(crate) fn grants(
    conn: &Connection,
    scope: GrantTable,
    owner: &str,
) -> rusqlite::Result<Vec<String>> {
    let sql = format!(
        "SELECT group_name FROM {} WHERE {} = ?1 ORDER BY group_name",
        scope.table(),
        scope.key()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map([owner], |r| r.get(0))?;
    rows.collect()
}

/// Removes every grant of `owner`; returns how many there were.
pub(crate) fn clear_grants(
    conn: &Connection,
    scope: GrantTable,
    owner: &str,
) -> rusqlite::Result<usize> {
    let sql = format!("DELETE FROM {} WHERE {} = ?1", scope.table(), scope.key());
    conn.prepare_cached(&sql)?.execute([owner])
}

/// The stored OAuth state of `server`.
pub(crate) fn oauth_load(
    conn: &Connection,
    server: &str,
) -> Result<Option<crate::auth::StoredAuth>> {
    use crate::auth::{ClientRegistration, OAuthTokens, StoredAuth, TokenEndpointAuth};
    let ctx = "reading OAuth tokens";
    let row = conn
        .prepare_cached(
            "SELECT access_token, refresh_token, expires_at, scope, client_id, client_secret, auth_method,
                    issuer
             FROM mcp_oauth WHERE server = ?1",
        )
        .map_err(sql_err(ctx))?
        .query_row([server], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<String>>(7)?,
            ))
        })
        .optional()
        .map_err(sql_err(ctx))?;
    Ok(row.map(
        |(
            access_token,
            refresh_token,
            expires_at,
            scope,
            client_id,
            client_secret,
            method,
            issuer,
        )| {
            StoredAuth {
                tokens: OAuthTokens {
                    access_token,
                    refresh_token,
                    expires_at: expires_at
                        .as_deref()
                        .and_then(crate::store::timestamp::parse_utc),
                    scope,
                },
                client: client_id.map(|client_id| ClientRegistration {
                    client_id,
                    client_secret,
                    auth_method: method
                        .as_deref()
                        .and_then(TokenEndpointAuth::parse)
                        .unwrap_or(TokenEndpointAuth::None),
                }),
                issuer,
            }
        },
    ))
}

/// Replaces the stored OAuth state of `server`.
pub(crate) fn oauth_save(
    conn: &Connection,
    server: &str,
    auth: &crate::auth::StoredAuth,
    now: SystemTime,
) -> rusqlite::Result<()> {
    let c = auth.client.as_ref();
    conn.prepare_cached(
        "INSERT INTO mcp_oauth (server, access_token, refresh_token, expires_at, scope, client_id,
                                client_secret, auth_method, updated_at, issuer)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (server) DO UPDATE SET access_token = excluded.access_token,
             refresh_token = excluded.refresh_token, expires_at = excluded.expires_at,
             scope = excluded.scope, client_id = excluded.client_id,
             client_secret = excluded.client_secret, auth_method = excluded.auth_method,
             updated_at = excluded.updated_at, issuer = excluded.issuer",
    )?
    .execute(params![
        server,
        auth.tokens.access_token,
        auth.tokens.refresh_token,
        auth.tokens.expires_at.map(format_utc_millis),
        auth.tokens.scope,
        c.map(|c| c.client_id.as_str()),
        c.and_then(|c| c.client_secret.as_deref()),
        c.map(|c| c.auth_method.as_str()),
        format_utc_millis(now),
        auth.issuer,
    ])?;
    Ok(())
}

/// Forgets the OAuth state of `server`; true if there was some.
pub(crate) fn oauth_clear(conn: &Connection, server: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM mcp_oauth WHERE server = ?1")?
        .execute([server])?
        > 0)
}
