"""Events in PostgreSQL: the events with their outbox and its publisher, the command outbox,
the delivery log and ordered lanes; each a store held on the process context."""
