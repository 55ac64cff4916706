-- skald-mcp store, schema version 1: server configurations and the
-- notifications (events) servers pushed.
--
-- Timestamps are ISO-8601 UTC text with milliseconds, e.g.
-- 2026-07-03T12:34:56.789Z, so they sort as text and read well in a shell.

CREATE TABLE mcp_servers (
    name          TEXT PRIMARY KEY NOT NULL CHECK (length(name) > 0),
    -- 'sse' is the legacy alias of 'http'; the store itself writes only the
    -- canonical names.
    transport     TEXT NOT NULL CHECK (transport IN ('stdio', 'http', 'sse')),
    command       TEXT,
    args          TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(args) AND json_type(args) = 'array'),
    env           TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(env) AND json_type(env) = 'object'),
    cwd           TEXT,
    url           TEXT,
    -- Stored as given: typically a ${VAR} reference, resolved at connect time.
    api_key       TEXT,
    description   TEXT,
    friendly_name TEXT,
    enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    CHECK (transport <> 'stdio' OR (command IS NOT NULL AND length(command) > 0)),
    CHECK (transport = 'stdio' OR url IS NOT NULL)
);

CREATE TABLE mcp_events (
    -- AUTOINCREMENT: an id, once acknowledged, is never handed out again,
    -- even after rows are deleted.
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    server       TEXT NOT NULL,
    method       TEXT NOT NULL,
    params       TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(params)),
    received_at  TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed')),
    processed_at TEXT,
    CHECK ((status = 'pending') = (processed_at IS NULL))
);

-- The pending scan: WHERE status = 'pending' ORDER BY id LIMIT n.
CREATE INDEX mcp_events_pending ON mcp_events (status, id);
