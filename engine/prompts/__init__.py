"""Prompt bundles: one bundle's manifest, templates and hash (`bundle`), and the registry of
shipped baselines and local experiments with their promotion history (`registry`)."""
