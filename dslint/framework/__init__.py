"""The rule framework: the base classes of script and config rules, their cases and docs, the registry."""
