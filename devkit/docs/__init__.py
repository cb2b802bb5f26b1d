"""The documentation site's generated pages (mkdocs.yml's hook)."""
