"""Fix a file: apply the edits of fixes (edits), the fix-and-relint loop (loop), the same loop for a DeepSpeed
config file (config), write the result (write)."""
