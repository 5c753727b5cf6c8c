"""Code actions: Fix JSON / Fix Markdown, Complete table and Regenerate selection, the repairs' worker process."""
