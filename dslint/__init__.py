"""dslint: a static analyzer and auto-fixer for DeepSpeed training scripts and configs."""

__version__ = "0.1.0"
