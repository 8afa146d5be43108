"""The run's spine: the bus, the journal (and its upgrader), logs, stderr's format and say(), the redaction both
writers apply, the Protocols adapters implement (ports), the re-arming wake-up, first_of. Imports only events, config and base."""
