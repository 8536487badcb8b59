"""Lint one file (a script or a config) into one result: rules, noqa comments, the prefilter; and many files."""
