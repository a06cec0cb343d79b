"""Redis pub/sub: wake-ups of long polls and streams, and the change notices of caches."""
