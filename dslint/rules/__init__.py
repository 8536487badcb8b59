"""One module per rule, named by its slug. `dslint.registry` imports every module here."""
