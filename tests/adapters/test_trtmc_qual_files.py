"""The owners' gates read from a checkout in TRTMC's apps/aiperf_qual shapes (our own fixture files, no TRTMC
file): Task entry over defaults, the profile's exceptions deep-merged, the quantized or sampled gate chosen,
every gate cited by file, revision and key; a Task without this workload's benchmark says so."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from orchestrator.base.errors import ConfigError, InventoryError
from orchestrator.commands.owner_files import read_owner_files
from orchestrator.events import GateCitation
from orchestrator.judge.owners import deep_merge, owners_gate
from orchestrator.judge.paired import ChosenGate

TASKS = textwrap.dedent("""\
    defaults:
      reference: {backend: auto}
      performance: {l1: {suite: catalog}}
    benchmarks:
      mmlu: {plugin: trtmc_mmlu, min_native: 30.0,
             gate: {margin: 1.0}, quantized_gate: {margin: 2.0}, sampled_gate: {margin: 2.0}}
      audioqa-v1: {suite: audioqa, metric: dataset, min_native: 20.0,
                   gate: {margin: 3.0}, quantized_gate: {margin: 5.0}, sampled_gate: {margin: 6.0},
                   seeds_when_sampled: [1, 2, 3, 4]}
      sts: {suite: stsb, metric: sts_spearman, gate: {margin: 0.5}}
      encoder_parity: {suite: encoder-parity, gate: {min_cosine: 0.999}}
    tasks:
      text_generation:
        absolute: [mmlu]
      audio_text_to_text:
        absolute: [mmlu, audioqa-v1]
        reference: {precision: bf16}
      encoding:
        absolute: [encoder_parity]
    """)
PROFILE = textwrap.dedent("""\
    # exceptions of one profile, deep-merged over its Task
    absolute: [mmlu, {name: audioqa-v1, quantized_gate: {margin: 10.0}}]
    reference: {adapter: families/x/native.py}
    """)


def checkout(tmp_path: Path, *, profile: str | None = PROFILE, git: bool = True) -> Path:
    root = tmp_path / "trtmc"
    (root / "apps/aiperf_qual/config/models").mkdir(parents=True)
    (root / "apps/aiperf_qual/config/tasks.yaml").write_text(TASKS)
    if profile is not None:
        (root / "apps/aiperf_qual/config/models/cascade-int8.yaml").write_text(profile)
    if git:
        run = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
        subprocess.run([*run[:3], "init", "-q"], check=True)
        subprocess.run([*run, "add", "-A"], check=True)
        subprocess.run([*run, "commit", "-qm", "fixture"], check=True)
    return root


def head(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


class TestOwnersGate:
    def test_profile_override_gives_the_quantized_gate_cited_in_its_file(self, tmp_path: Path) -> None:
        """The profile's `absolute` entry overrides the benchmark's quantized_gate: an int8 candidate gets
        10 points, cited at config/models/<profile>.yaml absolute[1].quantized_gate at the revision."""
        root = checkout(tmp_path)
        files = read_owner_files(root, "cascade-int8", revision="HEAD")
        gate = owners_gate(files, task="audio_text_to_text", benchmark="audioqa-v1", quantized=True, sampled=False)
        assert isinstance(gate, ChosenGate)
        rev = head(root)
        assert (gate.key, gate.margin, gate.min_native, gate.seeds) == ("quantized_gate", 10.0, 20.0, 1)
        models = "apps/aiperf_qual/config/models/cascade-int8.yaml"
        tasks = "apps/aiperf_qual/config/tasks.yaml"
        assert gate.citations == [
            GateCitation(file=models, revision=rev, entry="absolute[1].quantized_gate"),
            GateCitation(file=models, revision=rev, entry="absolute[1]"),
            GateCitation(file=tasks, revision=rev, entry="benchmarks.audioqa-v1.min_native"),
        ]
        assert gate.source == f"{models}@{rev} absolute[1].quantized_gate"

    def test_full_precision_and_sampling_choose_their_gates(self, tmp_path: Path) -> None:
        """A greedy bf16 candidate takes `gate`; a sampling one `sampled_gate` with seeds_when_sampled's count."""
        files = read_owner_files(checkout(tmp_path), "cascade-int8")
        plain = owners_gate(files, task="audio_text_to_text", benchmark="audioqa-v1", quantized=False, sampled=False)
        sampled = owners_gate(files, task="audio_text_to_text", benchmark="audioqa-v1", quantized=True, sampled=True)
        assert isinstance(plain, ChosenGate) and isinstance(sampled, ChosenGate)
        assert (plain.key, plain.margin, plain.citations[0].entry) == ("gate", 3.0, "benchmarks.audioqa-v1.gate")
        assert (sampled.key, sampled.margin, sampled.seeds) == ("sampled_gate", 6.0, 4)
        assert files.revision.endswith("+worktree")

    def test_without_a_profile_file_the_task_entry_applies(self, tmp_path: Path) -> None:
        """No config/models file: the Task's own list and the benchmark's gate, cited in tasks.yaml."""
        files = read_owner_files(checkout(tmp_path, profile=None, git=False), "cascade-int8")
        assert files.profile is None and files.revision == "unversioned"
        gate = owners_gate(files, task="audio_text_to_text", benchmark="audioqa-v1", quantized=True, sampled=False)
        assert isinstance(gate, ChosenGate) and (gate.key, gate.margin) == ("quantized_gate", 5.0)
        assert gate.citations[1] == GateCitation(file="apps/aiperf_qual/config/tasks.yaml", revision="unversioned",
                                                 entry="tasks.audio_text_to_text.absolute[1]")

    def test_a_task_without_this_workload_invents_no_gate(self, tmp_path: Path) -> None:
        """text_generation lists only mmlu: the answer names the Task, the file and its benchmarks; a Task
        missing from tasks.yaml and a parity gate are said so too."""
        files = read_owner_files(checkout(tmp_path, profile=None), "cascade-int8")
        said = owners_gate(files, task="text_generation", benchmark="audioqa-v1", quantized=True, sampled=False)
        assert said == ("Task text_generation lists no benchmark for this workload ('audioqa-v1') in "
                        "apps/aiperf_qual/config/tasks.yaml tasks.text_generation.absolute (its benchmarks: mmlu); "
                        "no gate applied")
        missing = owners_gate(files, task="audio_generation", benchmark="audioqa-v1", quantized=False, sampled=False)
        assert isinstance(missing, str) and "has no Task entry 'audio_generation'" in missing
        parity = owners_gate(files, task="encoding", benchmark="encoder_parity", quantized=False, sampled=False)
        assert isinstance(parity, str) and "is not a non-inferiority margin" in parity

    def test_a_revision_reads_the_files_as_committed(self, tmp_path: Path) -> None:
        """--rev reads the committed file, not a later edit in the working tree."""
        root = checkout(tmp_path)
        (root / "apps/aiperf_qual/config/models/cascade-int8.yaml").write_text("absolute: [mmlu]\n")
        at_rev = read_owner_files(root, "cascade-int8", revision="HEAD")
        now = read_owner_files(root, "cascade-int8")
        assert at_rev.profile is not None and len(at_rev.profile["absolute"]) == 2
        assert now.profile == {"absolute": ["mmlu"]}

    def test_a_bad_checkout_or_revision_is_named(self, tmp_path: Path) -> None:
        """A folder without tasks.yaml raises ConfigError saying so; an unknown revision InventoryError naming it."""
        with pytest.raises(ConfigError, match=r"\(working tree\): has no apps/aiperf_qual/config/tasks\.yaml, so the "
                                              r"owners' gates cannot be read"):
            read_owner_files(tmp_path, "p")
        with pytest.raises(InventoryError, match=r"revision 'nope' does not name a commit"):
            read_owner_files(checkout(tmp_path), "p", revision="nope")

    def test_deep_merge_merges_mappings_and_replaces_lists(self) -> None:
        """Mappings merge key by key; lists and scalars replace."""
        merged = deep_merge({"a": {"x": 1, "y": [1, 2]}, "b": 1}, {"a": {"y": [3]}, "c": 2})
        assert merged == {"a": {"x": 1, "y": [3]}, "b": 1, "c": 2}


def _git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                   check=True, capture_output=True)


class TestOwnersLayout:
    """The owners' files as TRTMC lays them out, read the way the inventory reads a checkout."""

    def test_a_bare_repository_is_read_at_its_head(self, tmp_path: Path) -> None:
        """`qualify --trtmc BARE.git` reads tasks.yaml and the profile's exceptions at HEAD, citing the commit."""
        root = checkout(tmp_path)
        bare = tmp_path / "trtmc.git"
        _git("clone", "-q", "--bare", str(root), str(bare))
        head = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        files = read_owner_files(bare, "cascade-int8")
        assert files.revision == head and files.profile_file == "apps/aiperf_qual/config/models/cascade-int8.yaml"
        gate = owners_gate(files, task="audio_text_to_text", benchmark="audioqa-v1", quantized=True, sampled=False)
        assert isinstance(gate, ChosenGate) and gate.margin == 10.0
        assert read_owner_files(bare, "cascade-int8", revision="HEAD").revision == head

    def test_the_inventory_fixture_of_current_main_as_a_bare_repository(self, tmp_path: Path) -> None:
        """The fixture checkout of TRTMC's current layout, committed and cloned bare: its Task entries over
        `defaults` (YAML anchors and merge keys included) and the profile's exceptions are read."""
        work = tmp_path / "main"
        shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "inventory" / "main", work)
        _git("-C", str(work), "init", "-q")
        _git("-C", str(work), "add", "-A")
        _git("-C", str(work), "commit", "-qm", "fixture")
        bare = tmp_path / "main.git"
        _git("clone", "-q", "--bare", str(work), str(bare))
        files = read_owner_files(bare, "omnivox-30b")
        assert files.tasks["tasks"]["transcription_streaming"] == {"absolute": ["librispeech"]}
        assert files.profile == {"absolute": ["mmlu"]}
        gate = owners_gate(files, task="text_generation", benchmark="mmlu", quantized=False, sampled=False)
        assert isinstance(gate, ChosenGate) and gate.margin == 1.0
        # The profile's exceptions replace its Task's list: the thinker is judged on mmlu only.
        reason = owners_gate(files, task="transcription", benchmark="librispeech", quantized=False, sampled=False)
        assert isinstance(reason, str) and "(its benchmarks: mmlu); no gate applied" in reason

    def test_a_revision_without_apps_aiperf_qual_says_so_naming_it(self, tmp_path: Path) -> None:
        """An older revision (before the owners' AIPerf qualification) is named, not a bare 'not found'."""
        root = tmp_path / "old"
        (root / "families").mkdir(parents=True)
        (root / "families" / "README.md").write_text("older layout\n")
        _git("-C", str(root), "init", "-q")
        _git("-C", str(root), "add", "-A")
        _git("-C", str(root), "commit", "-qm", "before aiperf_qual")
        bare = tmp_path / "old.git"
        _git("clone", "-q", "--bare", str(root), str(bare))
        head = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        with pytest.raises(ConfigError, match=rf"old\.git at {head[:12]} \(HEAD of a bare repository\): has no "
                                              r"apps/aiperf_qual/config/tasks\.yaml, .* \(revisions before the owners' "
                                              r"AIPerf qualification have no apps/aiperf_qual"):
            read_owner_files(bare, "p")
