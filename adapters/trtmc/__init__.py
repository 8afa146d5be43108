"""Everything trtmc-server: its server kind (argv, readiness, log lines) and its `--records` lines,
written by the reference server and read live or by ingest."""
