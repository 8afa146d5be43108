"""What may be posted from a run: credential redaction for every writer (secrets), private-detail
placeholders (private), the final scan (scan), and the paste-ready comment (comment, write).

Imports nothing here, so the journal writer and the log configuration can import `secrets` without
pulling in the reports this package's other modules read.
"""

__all__ = ["comment", "private", "scan", "secrets", "write"]
