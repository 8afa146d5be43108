"""What may be posted from a run: private-detail placeholders (private), the final scan (scan), and the
paste-ready comment (comment, write). Credential redaction, which every writer shares (the journal's
included), is the bottom layer's: orchestrator/spine/redaction.py.
"""

__all__ = ["comment", "private", "scan", "write"]
