"""`python -m orchestrator` is the `aqbench` command."""

from orchestrator.cli import main

raise SystemExit(main())
