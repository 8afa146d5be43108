"""Correlated requests to a Parquet file (pyarrow, an optional extra)."""

from __future__ import annotations

from orchestrator.base.errors import UsageError
from orchestrator.events import RequestCorrelated

__all__ = ["write_parquet"]


def write_parquet(correlated: list[RequestCorrelated], path: str) -> None:
    """One row per correlated request, columns = RequestCorrelated's fields. Blocks (file write)."""
    try:  # an optional extra, imported only when Parquet is asked for
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(f"--parquet {path}: writing Parquet needs pyarrow, which is not installed; "
                         "install the extra: pip install 'aqbench[parquet]'") from None

    fields = [f for f in RequestCorrelated.__struct_fields__ if f not in ("run_id", "seq", "mono_ns")]
    columns = {f: [getattr(c, f) for c in correlated] for f in fields}
    table = pa.table(columns) if correlated else pa.table({f: pa.array([], pa.null()) for f in fields})
    pq.write_table(table, path)
