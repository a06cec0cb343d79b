"""API role: the public HTTP API, its OpenAPI description, the checkout page and the dashboard."""
