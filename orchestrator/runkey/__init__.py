"""Run keys: the digests one model's result depends on (pure), and the key each configured model has now."""
