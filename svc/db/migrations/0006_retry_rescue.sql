-- Retries the broker lost: the scheduler looks for failed attempts whose next attempt is long
-- overdue (svc.events.rescue), reading them by the time of that next attempt.
CREATE INDEX delivery_attempts_next
    ON delivery_attempts (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
