"""The live page of a long run (`--serve [HOST:]PORT`): a read-only web page fed by a lossy bus subscriber,
rebuilt from the journal for a page that opens late, redacted as `aqbench publish` would. Estimates for a
person watching, never the source of a report."""

from orchestrator.live.address import ServeAddress, parse_serve

# The package itself stays light (the command line imports its address); `orchestrator.live.start` holds the
# server's entry point.
__all__ = ["ServeAddress", "parse_serve"]
