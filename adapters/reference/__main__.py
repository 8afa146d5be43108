"""`python -m adapters.reference [FLAGS]` runs the server; `python -m adapters.reference worker` the
native JSON-lines worker."""

from __future__ import annotations

import os
import sys


def _main() -> int:
    if sys.argv[1:2] == ["worker"]:
        from adapters.reference.worker import main as worker_main

        return worker_main(sys.argv[2:])
    from adapters.reference.serve import main

    return main(sys.argv[1:])


if __name__ == "__main__":
    code = _main()
    # Everything is written and closed by now (the records file, the stopped line); the interpreter's own
    # teardown (the speech models' destructors, module finalisation) took 0.2-0.35 s that every run waited on.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
