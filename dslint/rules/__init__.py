"""One module per rule, named by its slug. `dslint.framework.registry` imports every module here."""
