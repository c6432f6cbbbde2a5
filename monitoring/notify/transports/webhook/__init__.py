"""Webhooks: a person's HTTP endpoints, posted signed JSON, reached only at public addresses."""
