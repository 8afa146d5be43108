"""aqbench's core: configuration, events and bus, journal, supervision, correlation, judging, commands."""

__all__ = ["__version__"]

__version__ = "0.1.0"
