"""One module per `dslint` subcommand; `fix` has two helpers: `fix_configs` (the config files it fixes) and
`fix_report` (what it did, shared by both sides)."""
