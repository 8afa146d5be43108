"""Exec a command that the kernel signals when its parent dies (Linux PR_SET_PDEATHSIG), so that a server
whose supervisor is killed outright (a lost Ray node's worker, `kill -9`) is told to stop, not left running."""

from __future__ import annotations

import ctypes
import os
import sys

_PR_SET_PDEATHSIG = 1


# Run as a script, never imported by the package (it must start fast and import nothing of ours):
# `python -I pdeathsig.py SIGNUM PARENT_PID ARGV...`. Elsewhere than Linux it only execs.
def main(args: list[str]) -> None:
    signum, parent, argv = int(args[0]), int(args[1]), args[2:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        # The parent may have died before the signal was armed: then nobody would ever send it.
        if os.getppid() != parent:
            os._exit(128 + signum)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"pdeathsig: cannot exec {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
