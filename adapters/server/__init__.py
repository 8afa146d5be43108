"""Server processes: process groups, the subreaper, the resource sampler, readiness probes, the reference server's
kind (`adapters.server_kinds` pairs each `server.kind` with its adapters)."""
