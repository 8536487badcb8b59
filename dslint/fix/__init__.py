"""Fix a file: apply the edits of fixes (edits), the fix-and-relint loop (loop), write the result (write)."""
