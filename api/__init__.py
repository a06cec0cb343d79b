"""API role: the public HTTP API of the spec."""
