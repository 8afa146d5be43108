"""Everything that speaks to the outside: AIPerf, trtmc-server, audio media, the reference server."""

__all__: list[str] = []
