"""`aqbench campaign`: qualify many models side by side on a Ray cluster, one task per model.
Composition root: builds the Ray cluster adapter (a local 127.0.0.1 instance, or the cluster at
--address) and hands it, with `qualify_one` as the per-node runner, to orchestrator.campaign."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import msgspec

from orchestrator.base.errors import UsageError
from orchestrator.commands.keep_args import add_keep_inputs_argument, with_keep_inputs

if TYPE_CHECKING:  # the campaign package is heavy: imported by run(), not by `aqbench --help` or another command
    from orchestrator.campaign.ports import StopNotice
    from orchestrator.config import Config
    from orchestrator.qualify import QualifyOptions

from orchestrator.commands.grammar import add_config_argument, add_model_argument
from orchestrator.commands.serve_args import add_serve_arguments, serve_address

__all__ = ["register", "qualify_one", "qualify_options"]

EXTRA_MISSING = ("aqbench campaign needs Ray, which is not installed; install the extra: "
                 "pip install 'aqbench[campaign]' (or pip install ray)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("campaign", help="qualify many models side by side on a Ray cluster (one task per model)",
                       description="Runs each model's whole qualification as one Ray task on one node and streams "
                       "its journal back live: runs/<campaign>/campaign.jsonl, models/<name>/events.jsonl and "
                       "reports, and the campaign's report.{json,md,html}. Without --address (and without "
                       "RAY_ADDRESS) starts a local Ray on 127.0.0.1 with no dashboard. Exit 0 when every model "
                       "is aiperf-qualified, 1 otherwise, 2 on configuration errors, 3 when the campaign itself failed, "
                       "130/143 when interrupted.")
    add_config_argument(p)
    p.add_argument("--address", default=None, help="join the Ray cluster at this address (default: RAY_ADDRESS, "
                   "else a local Ray on 127.0.0.1)")
    add_model_argument(p, "run only this configured model (repeatable)", many=True)
    p.add_argument("--max-parallel", type=int, default=None, metavar="N",
                   help="at most N models at once (default: [campaign] max_parallel; 0 = as resources allow)")
    p.add_argument("--resume", default="", metavar="CAMPAIGN_DIR",
                   help="continue this campaign: skip models whose final row has the current run key, run the rest "
                        "(a row made under another key is run again; campaign.jsonl says what changed)")
    add_serve_arguments(p)
    add_keep_inputs_argument(p)
    p.set_defaults(func=run)


async def qualify_one(cfg: Config, model: str, stop: StopNotice) -> int:
    """Qualify one model in this process (on a cluster node); on cancellation, reports are still written."""
    # Imported here: this runs in a Ray task on a node; the driver's command line never loads qualify or anyio.
    import anyio

    from adapters.ray.gpus import only_visible_gpus, visible_gpus
    from orchestrator.commands.wiring import real_toolkit
    from orchestrator.qualify import qualify
    from orchestrator.run import Interrupt

    interrupt = Interrupt()
    stop.attach(interrupt)
    opts = await anyio.to_thread.run_sync(qualify_options, cfg, model)  # reads the owners' files (git)
    toolkit = real_toolkit()
    visible = visible_gpus(cfg.server.env.get("CUDA_VISIBLE_DEVICES", ""))
    if visible is not None:  # the GPUs Ray gave this task: the sampler reports those and no others
        parts = toolkit.server_parts
        toolkit = dataclasses.replace(toolkit, server_parts=lambda kind: only_visible_gpus(parts(kind), visible))
    try:
        return await qualify(cfg, opts, interrupt, toolkit)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_write_interrupted_reports, Path(cfg.run.output_dir))
        raise


def qualify_options(cfg: Config, model: str) -> QualifyOptions:
    """What `aqbench qualify --model MODEL` would be given, the owners' gates included: the files its
    `[models.correctness.noninferiority] source` names, read on this node as qualify reads them. Blocks."""
    # Imported here, as in qualify_one: qualify and the owners' file readers load on the node that runs it.
    from orchestrator.commands.owner_files import owner_files
    from orchestrator.qualify import QualifyOptions

    only = msgspec.structs.replace(cfg, models=[m for m in cfg.models if m.name == model])
    return QualifyOptions(models=[model], argv=["aqbench", "qualify", "--config", cfg.source, "--model", model],
                          owners=owner_files(only))


def _write_interrupted_reports(output_dir: Path) -> None:
    """qualify writes its reports only when it ends on its own; a stopped run gets them here."""
    # Imported here: the reports (Jinja2) load only when a stopped run needs them.
    from orchestrator.reports import write_reports

    for journal in output_dir.glob("*/events.jsonl"):
        write_reports(journal, journal.parent)


def run(args: argparse.Namespace) -> int:
    # Imported here: orchestrator.spine.logs loads structlog, which `aqbench --help` never needs.
    # Imported here, not at the top: the campaign package (Ray glue) costs every other command start-up time.
    from orchestrator.campaign import CampaignOptions, StopRequest, run_campaign
    from orchestrator.config import load_config
    from orchestrator.spine.logs import say

    cfg = with_keep_inputs(load_config(args.config), args)
    serve = serve_address(args)
    if args.max_parallel is not None and args.max_parallel < 0:
        raise UsageError(f"--max-parallel {args.max_parallel}: must be 0 (as resources allow) or more")
    # Imported here: the loopback pin must run before Ray is imported, and only for this command.
    from adapters.ray.loopback import pin_to_loopback

    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        pin_to_loopback()  # before Ray is imported: the local default listens on 127.0.0.1 only
    try:
        # Ray is the optional extra `aqbench[campaign]`: its absence is a usage error, said below.
        from adapters.ray.cluster import RayCluster
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise UsageError(EXTRA_MISSING) from None
    opts = CampaignOptions(models=args.model, max_parallel=args.max_parallel, resume=args.resume, argv=sys.argv)
    stop = StopRequest()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set(signum)

    # Imported here, not at the top: the live page's aiohttp server loads only for a campaign that runs.
    from orchestrator.live.campaign import serve_campaign

    # The page first: a taken port stops the campaign before Ray starts. It follows the files the driver writes.
    with serve_campaign(cfg, serve, list(sys.argv)) as page:
        cluster = RayCluster(qualify_one, address=address)
        # After Ray's start, so that these handlers (not Ray's) decide what a signal does to the driver.
        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            exit_code, folder = run_campaign(cfg, opts, cluster, stop, on_folder=page.attach if page else None)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            cluster.close()
        say(f"\ncampaign: {folder}")
        say(f"  reports: {folder / 'report.md'}, {folder / 'report.html'}, {folder / 'report.json'}")
        if page is not None and serve is not None and stop.signum is None:
            page.linger(serve.linger_s)
    return exit_code
