-- skald-mcp store, schema version 6: whether a stdio server inherits the
-- host's whole environment (1) or only the allowlist plus its `env` (0, the
-- default, also for every server stored before this column existed: the
-- host's secrets stop reaching servers that were never meant to see them).

ALTER TABLE mcp_servers ADD COLUMN inherit_env INTEGER NOT NULL DEFAULT 0
    CHECK (inherit_env IN (0, 1));
