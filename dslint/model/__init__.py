"""One model of the program: a summary per module (`summary.py`, from one `ast` parse, cached by content), typed
abstract values (`values.py`), one table of library knowledge (`library.py`), classes across the project
(`classes.py`: bases, inherited methods, overrides) and one project fixpoint over the summaries (`fixpoint.py`,
with the per-function evaluation in `evaluate.py`). docs/architecture.md shows the flow.

The model sits below `script/` and `project/`: it imports only `dslint.diagnostics`-level modules, so both the
per-file facts and the project index can read it.
"""
