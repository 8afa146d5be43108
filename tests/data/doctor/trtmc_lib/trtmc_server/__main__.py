"""Stand-in `python -m trtmc_server`: trtmc-server's flags, --worker-binary required and hidden from --help
(argparse.SUPPRESS), as TRTMC's front end declares them. Parses its argv and exits; serves nothing."""

import argparse

parser = argparse.ArgumentParser(prog="trtmc-server")
parser.add_argument("bundle")
for flag in ("--model-name", "--host", "--port", "--replicas", "--records", "--startup-timeout"):
    parser.add_argument(flag)
parser.add_argument("--worker-binary", required=True, help=argparse.SUPPRESS)
parser.parse_args()
