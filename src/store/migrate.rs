//! Schema migrations: numbered SQL files in `migrations/`, embedded in the
//! binary, applied in order inside one transaction and recorded in
//! `mcp_schema_migrations`.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{McpError, Result};

use super::timestamp::format_utc_millis;

/// One embedded migration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// The schema version the database is at once this migration is applied.
    pub version: u32,
    /// The file name without extension, recorded alongside the version.
    pub name: &'static str,
    /// The SQL, run as one batch.
    pub sql: &'static str,
}

/// Every migration, in order; `MIGRATIONS[i].version == i + 1`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_initial",
        sql: include_str!("../../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "0002_mcp_grants",
        sql: include_str!("../../migrations/0002_mcp_grants.sql"),
    },
    Migration {
        version: 3,
        name: "0003_mcp_oauth",
        sql: include_str!("../../migrations/0003_mcp_oauth.sql"),
    },
    Migration {
        version: 4,
        name: "0004_mcp_server_era",
        sql: include_str!("../../migrations/0004_mcp_server_era.sql"),
    },
    Migration {
        version: 5,
        name: "0005_oauth_issuer",
        sql: include_str!("../../migrations/0005_oauth_issuer.sql"),
    },
    Migration {
        version: 6,
        name: "0006_mcp_server_inherit_env",
        sql: include_str!("../../migrations/0006_mcp_server_inherit_env.sql"),
    },
    Migration {
        version: 7,
        name: "0007_mcp_server_wire",
        sql: include_str!("../../migrations/0007_mcp_server_wire.sql"),
    },
    Migration {
        version: 8,
        name: "0008_mcp_server_headers",
        sql: include_str!("../../migrations/0008_mcp_server_headers.sql"),
    },
];

/// The schema version this build creates and understands.
pub(crate) const LATEST_VERSION: u32 = MIGRATIONS.len() as u32;

const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS mcp_schema_migrations (
    version    INTEGER PRIMARY KEY NOT NULL,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

fn sql_err(context: &str) -> impl FnOnce(rusqlite::Error) -> McpError + '_ {
    move |e| McpError::Store {
        context: context.to_string(),
        message: e.to_string(),
        source: Some(Box::new(e)),
    }
}

/// The version recorded in the database; 0 for a database this store never
/// migrated (no version table).
pub(crate) fn current_version(conn: &Connection) -> Result<u32> {
    let ctx = "reading the schema version";
    let exists: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mcp_schema_migrations'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql_err(ctx))?;
    if exists.is_none() {
        return Ok(0);
    }
    let v: Option<i64> = conn
        .query_row("SELECT max(version) FROM mcp_schema_migrations", [], |r| {
            r.get(0)
        })
        .map_err(sql_err(ctx))?;
    u32::try_from(v.unwrap_or(0)).map_err(|_| McpError::Store {
        context: ctx.into(),
        message: format!("invalid schema version {v:?}"),
        source: None,
    })
}

/// Brings the database to [`LATEST_VERSION`]; returns how many migrations
/// were applied.
pub(crate) fn migrate(conn: &mut Connection) -> Result<usize> {
    migrate_to(conn, MIGRATIONS, LATEST_VERSION)
}

/// Applies the migrations of `migrations` above the database's version, up
/// to and including `target`, in one transaction: the database ends at
/// `target` or, on any error, unchanged.
///
/// A database at a version above every known migration is refused with a
/// clear error: it was written by a newer build, and guessing at its schema
/// would risk corrupting it.
pub(crate) fn migrate_to(
    conn: &mut Connection,
    migrations: &[Migration],
    target: u32,
) -> Result<usize> {
    let known = migrations.last().map_or(0, |m| m.version);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql_err("starting the migration transaction"))?;
    let current = current_version(&tx)?;
    if current > known {
        return Err(McpError::Store {
            context: "opening the database".into(),
            message: format!(
                "the database schema is at version {current}, newer than the \
                 latest this build of skald-mcp knows ({known}); use a newer build"
            ),
            source: None,
        });
    }
    tx.execute_batch(VERSION_TABLE)
        .map_err(sql_err("creating the schema version table"))?;
    let mut applied = 0;
    let now = format_utc_millis(std::time::SystemTime::now());
    for m in migrations
        .iter()
        .filter(|m| m.version > current && m.version <= target)
    {
        let ctx = format!("applying migration {}", m.name);
        tx.execute_batch(m.sql).map_err(sql_err(&ctx))?;
        tx.execute(
            "INSERT INTO mcp_schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            rusqlite::params![m.version, m.name, now],
        )
        .map_err(sql_err(&ctx))?;
        applied += 1;
    }
    tx.commit()
        .map_err(sql_err("committing the migration transaction"))?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    #[test]
    fn versions_are_contiguous_and_match_file_names() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.name);
            assert!(
                m.name.starts_with(&format!("{:04}_", m.version)),
                "{}",
                m.name
            );
        }
    }

    #[test]
    fn fresh_database() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(current_version(&conn).unwrap(), 0);
        assert_eq!(migrate(&mut conn).unwrap(), MIGRATIONS.len());
        assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
        for t in [
            "mcp_events",
            "mcp_schema_migrations",
            "mcp_servers",
            "session_mcp_grants",
            "stack_mcp_grants",
        ] {
            assert!(tables(&conn).iter().any(|n| n == t), "missing {t}");
        }
        // Idempotent.
        assert_eq!(migrate(&mut conn).unwrap(), 0);
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM mcp_schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(rows, MIGRATIONS.len() as i64);
    }

    #[test]
    fn every_earlier_version_upgrades_keeping_data() {
        let starts = std::iter::once(0).chain(MIGRATIONS.iter().map(|m| m.version));
        for start in starts.filter(|v| *v < LATEST_VERSION) {
            let mut conn = Connection::open_in_memory().unwrap();
            migrate_to(&mut conn, MIGRATIONS, start).unwrap();
            assert_eq!(current_version(&conn).unwrap(), start);
            if start >= 1 {
                conn.execute_batch(
                    "INSERT INTO mcp_servers (name, transport, command, created_at, updated_at)
                       VALUES ('old', 'stdio', 'python3', 't', 't');
                     INSERT INTO mcp_events (server, method, params, received_at)
                       VALUES ('old', 'event/x', '{\"a\":1}', 't');",
                )
                .unwrap();
            }
            let applied = migrate(&mut conn).unwrap();
            let expected = MIGRATIONS.iter().filter(|m| m.version > start).count();
            assert_eq!(applied, expected, "from {start}");
            assert_eq!(current_version(&conn).unwrap(), LATEST_VERSION);
            if start >= 1 {
                let (name, params): (String, String) = conn
                    .query_row(
                        "SELECT s.name, e.params FROM mcp_servers s JOIN mcp_events e ON e.server = s.name",
                        [],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                assert_eq!((name.as_str(), params.as_str()), ("old", "{\"a\":1}"));
            }
            conn.execute(
                "INSERT INTO session_mcp_grants VALUES ('s', 'gmail', 't')",
                [],
            )
            .unwrap();
        }
    }

    #[test]
    fn newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO mcp_schema_migrations VALUES (?1, 'future', 't')",
            [LATEST_VERSION + 1],
        )
        .unwrap();
        let e = migrate(&mut conn).unwrap_err().to_string();
        assert!(e.contains("newer"), "{e}");
        assert!(
            e.contains(&format!("version {}", LATEST_VERSION + 1)),
            "{e}"
        );
    }

    #[test]
    fn a_failing_migration_changes_nothing() {
        const BROKEN: &[Migration] = &[
            Migration {
                version: 1,
                name: "0001_ok",
                sql: "CREATE TABLE a (x INTEGER);",
            },
            Migration {
                version: 2,
                name: "0002_broken",
                sql: "CREATE TABLE b (x INTEGER); THIS IS NOT SQL;",
            },
        ];
        let mut conn = Connection::open_in_memory().unwrap();
        let e = migrate_to(&mut conn, BROKEN, 2).unwrap_err().to_string();
        assert!(e.contains("0002_broken"), "{e}");
        assert_eq!(current_version(&conn).unwrap(), 0);
        assert!(tables(&conn).is_empty(), "{:?}", tables(&conn));
    }

    #[test]
    fn constraints_hold() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let bad = [
            "INSERT INTO mcp_servers (name, transport, command, created_at, updated_at) VALUES ('a', 'ftp', 'c', 't', 't')",
            "INSERT INTO mcp_servers (name, transport, created_at, updated_at) VALUES ('a', 'stdio', 't', 't')",
            "INSERT INTO mcp_servers (name, transport, created_at, updated_at) VALUES ('a', 'http', 't', 't')",
            "INSERT INTO mcp_servers (name, transport, command, args, created_at, updated_at) VALUES ('a', 'stdio', 'c', 'nope', 't', 't')",
            "INSERT INTO mcp_events (server, method, params, received_at) VALUES ('s', 'm', '{', 't')",
            "INSERT INTO mcp_events (server, method, received_at, status) VALUES ('s', 'm', 't', 'done')",
            "INSERT INTO mcp_events (server, method, received_at, status) VALUES ('s', 'm', 't', 'processed')",
        ];
        for sql in bad {
            assert!(conn.execute(sql, []).is_err(), "accepted: {sql}");
        }
    }

    #[test]
    fn pending_scan_uses_the_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(
                "EXPLAIN QUERY PLAN SELECT id FROM mcp_events \
                 WHERE status = 'pending' ORDER BY id LIMIT 10",
            )
            .unwrap()
            .query_map([], |r| r.get::<_, String>(3))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let plan = plan.join("; ");
        assert!(plan.contains("mcp_events_pending"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }
}
