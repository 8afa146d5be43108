"""The server's supervision: its spec, the supervisor that starts, probes and stops it, how a stop reads, and the
host it runs on (sampled while a run runs, summarised over a span)."""
