"""Terminals: the record, the device protocol, presence, and the use cases of a terminal payment."""
