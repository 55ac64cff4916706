-- skald-mcp store, schema version 4: the protocol era each server was found
-- to speak ('modern': MCP 2026-07-28 and later, stateless; 'legacy': the
-- initialize handshake), and the version agreed. Kept with the server's row
-- so that the next connection tries that era first; it is re-probed when
-- the assumption turns out wrong. NULL: never connected.

ALTER TABLE mcp_servers ADD COLUMN era TEXT
    CHECK (era IS NULL OR era IN ('modern', 'legacy'));
ALTER TABLE mcp_servers ADD COLUMN protocol_version TEXT;
