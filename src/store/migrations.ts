// Schema migrations, applied in order and keyed on PRAGMA user_version; never edit one that has shipped.

export const migrations: readonly string[] = [
  // 1: sandboxes, allowlist, approvals, audit
  `
  CREATE TABLE sandboxes (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL CHECK (name GLOB '[a-z0-9]*' AND name NOT GLOB '*[^a-z0-9-]*' AND length(name) <= 63),
    repo        TEXT NOT NULL,
    backend     TEXT NOT NULL CHECK (backend IN ('docker', 'macos', 'linux-user', 'fake')),
    state       TEXT NOT NULL CHECK (state IN ('active', 'stopped', 'archived', 'deleted')),
    identity    TEXT NOT NULL DEFAULT '{}',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    last_used_at INTEGER
  );
  CREATE UNIQUE INDEX sandboxes_live_name ON sandboxes (repo, name) WHERE state != 'deleted';

  CREATE TABLE allowlist (
    id          INTEGER PRIMARY KEY,
    sandbox_id  INTEGER REFERENCES sandboxes(id) ON DELETE CASCADE,
    pattern     TEXT NOT NULL,
    added_by    TEXT NOT NULL,
    added_at    INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX allowlist_scope_pattern ON allowlist (coalesce(sandbox_id, 0), pattern);

  CREATE TABLE approvals (
    id          INTEGER PRIMARY KEY,
    sandbox_id  INTEGER NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    host        TEXT NOT NULL,
    port        INTEGER NOT NULL,
    reason      TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'allowed', 'denied')),
    count       INTEGER NOT NULL DEFAULT 1,
    first_seen  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    decided_by  TEXT,
    decided_at  INTEGER
  );
  CREATE UNIQUE INDEX approvals_pending_once ON approvals (sandbox_id, host) WHERE state = 'pending';

  CREATE TABLE audit (
    id          INTEGER PRIMARY KEY,
    ts          INTEGER NOT NULL,
    sandbox_id  INTEGER,
    kind        TEXT NOT NULL,
    action      TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '{}'
  );
  CREATE INDEX audit_sandbox_ts ON audit (sandbox_id, ts);
  CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
  CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
  `,
  // 2: 'archived' is gone: nothing ever set it, and a state with no meaning is a state nobody can rely on. The table's
  // CHECK cannot change without rebuilding it (which would cascade into allowlist and approvals), so triggers refuse it.
  `
  UPDATE sandboxes SET state = 'stopped' WHERE state = 'archived';
  CREATE TRIGGER sandboxes_state_insert BEFORE INSERT ON sandboxes WHEN NEW.state NOT IN ('active', 'stopped', 'deleted')
    BEGIN SELECT RAISE(ABORT, 'sandbox state must be active, stopped or deleted'); END;
  CREATE TRIGGER sandboxes_state_update BEFORE UPDATE OF state ON sandboxes WHEN NEW.state NOT IN ('active', 'stopped', 'deleted')
    BEGIN SELECT RAISE(ABORT, 'sandbox state must be active, stopped or deleted'); END;
  `,
  // 3: approvals are of two kinds: egress (host and port) and bridge (what the bridge refused: its subject in `host`,
  // port 0). A pending one is unique per sandbox, kind and subject.
  `
  ALTER TABLE approvals ADD COLUMN kind TEXT NOT NULL DEFAULT 'egress' CHECK (kind IN ('egress', 'bridge'));
  DROP INDEX approvals_pending_once;
  CREATE UNIQUE INDEX approvals_pending_once ON approvals (sandbox_id, kind, host) WHERE state = 'pending';
  `,
  // 4: pending approvals collapse by host and port (one per sandbox, kind, host and port); a removed sandbox's go.
  `
  DROP INDEX approvals_pending_once;
  CREATE UNIQUE INDEX approvals_pending_once ON approvals (sandbox_id, kind, host, port) WHERE state = 'pending';
  DELETE FROM approvals WHERE sandbox_id IN (SELECT id FROM sandboxes WHERE state = 'deleted');
  `,
  // 5: the transparent path's name map: which loopback address stands for which name, per sandbox, for as long as it
  // lives (a client may cache an answer for ever). Given out in order, never reused.
  `
  CREATE TABLE dns_names (
    sandbox_id  INTEGER NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    address     TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, name),
    UNIQUE (sandbox_id, address)
  );
  `,
  // 6: what a sandbox's audit budget held back (invariant 14, bounded): counted per sandbox and action, updated in place
  // (never grown), and turned into one \`audit.held-back\` row of the audit log when that sandbox may write again or the
  // log is read. A count is written before the refusal it counts is answered, so a crash loses none.
  `
  CREATE TABLE audit_held (
    sandbox_id  INTEGER NOT NULL,
    action      TEXT NOT NULL,
    count       INTEGER NOT NULL,
    first_ts    INTEGER NOT NULL,
    last_ts     INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, action)
  );
  `,
  // 7: secrets bound to hosts (\`sbx secret set NAME --host …\`): one per name for every sandbox (sandbox_id NULL) or
  // for one; their spec as JSON (never a value: values stay in the vault or their source). And the placeholder each
  // sandbox was given for each, kept while it lives (its agent may have written it into a config file).
  `
  CREATE TABLE secret_bindings (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    sandbox_id   INTEGER REFERENCES sandboxes(id) ON DELETE CASCADE,
    spec         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
  );
  CREATE UNIQUE INDEX secret_bindings_scope_name ON secret_bindings (coalesce(sandbox_id, 0), name);
  CREATE TABLE secret_placeholders (
    sandbox_id   INTEGER NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    placeholder  TEXT NOT NULL,
    PRIMARY KEY (sandbox_id, name)
  );
  `,
  // 8: egress rules that see requests (\`sbx allow HOST --method … --path …\`, \`sbx deny HOST --method …\`): for every
  // sandbox (sandbox_id NULL) or one, gone with it; the rule as canonical JSON (core/rules.ts RuleSpec), once per scope.
  `
  CREATE TABLE egress_rules (
    id         INTEGER PRIMARY KEY,
    sandbox_id INTEGER REFERENCES sandboxes(id) ON DELETE CASCADE,
    spec       TEXT NOT NULL,
    added_by   TEXT NOT NULL,
    added_at   INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX egress_rules_scope_spec ON egress_rules (coalesce(sandbox_id, 0), spec);
  `,
  // 9: what each sandbox's model calls used (the LLM budget's ledger): one row per sandbox, day and model, updated in
  // place (never a row per call; at most LLM_MODELS_PER_DAY models a day, the rest as "other"), gone with its sandbox.
  // And approvals of a third kind, 'budget' (a sandbox at its LLM budget asks for more): the kind's CHECK cannot change
  // in place, so the table is made again with its rows, ids and index.
  `
  CREATE TABLE llm_usage (
    sandbox_id   INTEGER NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    day          TEXT NOT NULL,
    model        TEXT NOT NULL,
    calls        INTEGER NOT NULL DEFAULT 0,
    estimated    INTEGER NOT NULL DEFAULT 0,
    input        INTEGER NOT NULL DEFAULT 0,
    output       INTEGER NOT NULL DEFAULT 0,
    cache_read   INTEGER NOT NULL DEFAULT 0,
    cache_write  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sandbox_id, day, model)
  );
  CREATE TABLE approvals_new (
    id          INTEGER PRIMARY KEY,
    sandbox_id  INTEGER NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    host        TEXT NOT NULL,
    port        INTEGER NOT NULL,
    reason      TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'allowed', 'denied')),
    count       INTEGER NOT NULL DEFAULT 1,
    first_seen  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL,
    decided_by  TEXT,
    decided_at  INTEGER,
    kind        TEXT NOT NULL DEFAULT 'egress' CHECK (kind IN ('egress', 'bridge', 'budget'))
  );
  INSERT INTO approvals_new (id, sandbox_id, host, port, reason, state, count, first_seen, last_seen, decided_by, decided_at, kind)
    SELECT id, sandbox_id, host, port, reason, state, count, first_seen, last_seen, decided_by, decided_at, kind FROM approvals;
  DROP TABLE approvals;
  ALTER TABLE approvals_new RENAME TO approvals;
  CREATE UNIQUE INDEX approvals_pending_once ON approvals (sandbox_id, kind, host, port) WHERE state = 'pending';
  `,
  // 10: allowlist entries that last a time (\`--for 30m\`: expires_at) or one connection (\`--once\`: once = 1, with an
  // expiry too, for one never used). The proxy's read leaves out an entry past its expiry; a sweep deletes it and says so.
  `
  ALTER TABLE allowlist ADD COLUMN expires_at INTEGER;
  ALTER TABLE allowlist ADD COLUMN once INTEGER NOT NULL DEFAULT 0 CHECK (once IN (0, 1));
  CREATE INDEX allowlist_expires ON allowlist (expires_at) WHERE expires_at IS NOT NULL;
  `,
];
