"""One module per `dslint` subcommand."""
