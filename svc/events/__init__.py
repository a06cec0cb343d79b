"""Events: their storage with the outbox, publishing, ordering and the delivery log."""
