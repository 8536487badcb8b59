"""runtime_check: run the original and the fixed script for one training step and report memory per phase."""
