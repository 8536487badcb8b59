"""The memory forecast: model states per rank from the project (`dslint memory`, runtime_check --dry-run)."""
