"""API keys: records and permissions, their store, and making, rolling and revoking them."""
