-- The lists integrators reconcile with (events, payments, refunds) filter by type, status,
-- channel, terminal or payment and by time; each filter reads one range of an index ordered
-- like the list, so a page costs the same however large the table.
CREATE INDEX events_scope_type ON events (org_id, env, type, created_at DESC, id DESC);
CREATE INDEX payments_scope_status ON payments (org_id, env, status, created_at DESC, id DESC);
CREATE INDEX payments_scope_channel ON payments (org_id, env, channel, created_at DESC, id DESC);
CREATE INDEX payments_scope_terminal
    ON payments (org_id, env, terminal_id, created_at DESC, id DESC);
CREATE INDEX refunds_scope ON refunds (org_id, env, created_at DESC, id DESC);
CREATE INDEX refunds_scope_status ON refunds (org_id, env, status, created_at DESC, id DESC);
