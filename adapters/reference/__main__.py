"""`python -m adapters.reference [FLAGS]` runs the server; `python -m adapters.reference worker` the
native JSON-lines worker."""

from __future__ import annotations

import sys


def _main() -> int:
    if sys.argv[1:2] == ["worker"]:
        from adapters.reference.worker import main as worker_main

        return worker_main(sys.argv[2:])
    from adapters.reference.serve import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(_main())
