"""The terminal protocol and the simulation terminal that speaks it."""
