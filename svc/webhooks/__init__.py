"""Webhook endpoints: where events are delivered, with their signing secrets."""
