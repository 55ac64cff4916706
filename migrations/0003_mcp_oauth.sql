-- skald-mcp store, schema version 3: OAuth state per HTTP server.
--
-- The tokens are stored as the server issued them (the database file is
-- the user's own, like a browser profile); they are never logged.

CREATE TABLE mcp_oauth (
    server        TEXT PRIMARY KEY NOT NULL,
    access_token  TEXT NOT NULL,
    refresh_token TEXT,
    expires_at    TEXT,
    scope         TEXT,
    client_id     TEXT,
    client_secret TEXT,
    auth_method   TEXT CHECK (auth_method IS NULL
                              OR auth_method IN ('client_secret_basic', 'client_secret_post', 'none',
                                                 'private_key_jwt')),
    updated_at    TEXT NOT NULL
) WITHOUT ROWID;
