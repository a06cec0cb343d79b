"""Load harness comparing the webhook delivery service with the pipelines teams build instead."""
