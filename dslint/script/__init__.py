"""Everything dslint knows about one Python script: its facts, and the context rules run in."""
