"""Authoring the schema: sql/head/ built into a schema, two schemas compared
through the catalogue, head's SQL held to the rules that keep it ready for
Citus, and a new revision started from what head changed."""
