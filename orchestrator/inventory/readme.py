"""Read a family's READMEs for what the owners recorded: checkpoints on audio table rows, results tables, the
route's limits, and every prose sentence about audio. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

import msgspec

from orchestrator.inventory.records import Evidence, QualityRecord, RouteLimits, SourceDocument

__all__ = ["ReadmeFacts", "HF_ID", "read_readme"]

# Rules, on Markdown as written (code fences skipped, sentences joined across line breaks):
# - a table's checkpoint is the Hugging Face id in its first cell; a column whose header speaks of failure records
#   failures ("quality" in it: quality failures), one that speaks of success or passing records passes; a cell's modes
#   are split at ";" and a mode counts for audio when it names audio ("text/audio" too);
# - limits (precision, TP, batch, standalone or paired) come from sentences that name the standalone route
#   (FP16/BF16/..., `TPn`, `batchn`), and a sentence that calls paired builds text-only says paired media is not
#   mapped;
# - a sentence about audio is negative when it says not, no, lacks, without or never.
HF_ID = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w-]*/[A-Za-z0-9][\w.-]*[A-Za-z0-9])(?![\w/-])")
_AUDIO = re.compile(r"\baudio\b", re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(not|no|lacks|without|never|cannot)\b", re.IGNORECASE)
_PRECISION = re.compile(r"\b(fp16|bf16|fp32|fp8|nvfp4|int8|int4)\b", re.IGNORECASE)
_TP = re.compile(r"\bTP\s?(\d+)\b")
_BATCH = re.compile(r"\bbatch(?:\s*size)?\s?(\d+)\b", re.IGNORECASE)
_STANDALONE = re.compile(r"\bstandalone\b", re.IGNORECASE)
_PAIRED_TEXT_ONLY = re.compile(r"\bpaired\b.*\btext[- ]only\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


class ReadmeFacts(msgspec.Struct, kw_only=True):
    """One README's facts; `named` maps a Hugging Face id (as written) to the table line naming it."""

    named: dict[str, Evidence] = {}
    quality: list[QualityRecord] = []
    limits: RouteLimits | None = None
    audio_sentences: list[Evidence] = []


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _blocks(text: str) -> Iterator[tuple[str, str, list[tuple[int, str]]]]:
    """(kind "table" | "prose", heading, [(line number, text)]) blocks, code fences skipped."""
    heading, kind, fenced = "", "", False
    block: list[tuple[int, str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if block:
                yield kind, heading, block
            kind, block = "", []
            continue
        if fenced:
            continue
        this = "table" if line.lstrip().startswith("|") else ("" if not line.strip() else "prose")
        m = _HEADING.match(line)
        if m or line.lstrip().startswith(("- ", "* ")) or this != kind:
            if block:
                yield kind, heading, block
            block, kind = [], this
            if m:
                heading, kind = m.group(1).strip(), ""
                continue
        if this:
            block.append((n, line.strip()))
    if block:
        yield kind, heading, block


def _sentences(block: list[tuple[int, str]]) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """Each sentence of a prose block with the (offset, line) marks to find the line of any match."""
    text, marks = "", []
    for n, line in block:
        marks.append((len(text), n))
        text += line.lstrip("-* ") + " "
    start = 0
    for m in [*_SENTENCE_END.finditer(text), None]:
        end = m.start() if m else len(text)
        sentence = text[start:end].strip()
        if sentence:
            yield sentence, [(off - start, n) for off, n in marks if off <= end]
        start = m.end() if m else len(text)


def _line_at(marks: list[tuple[int, int]], offset: int) -> int:
    return max((n for off, n in marks if off <= offset), default=marks[0][1])


def _outcome(header: str) -> Literal["passed", "quality-failure", "failed", ""]:
    low = header.lower()
    if "fail" in low:
        return "quality-failure" if "quality" in low or "accuracy" in low else "failed"
    return "passed" if "success" in low or "pass" in low else ""


def _table(doc: SourceDocument, heading: str, rows: list[tuple[int, str]], facts: ReadmeFacts) -> None:
    header = _cells(rows[0][1])
    for n, line in rows[1:]:
        cells = _cells(line)
        if all(set(c) <= set("-: ") for c in cells):
            continue
        ids = HF_ID.findall(cells[0])
        if _AUDIO.search(line) or "audio" in line.lower():
            for hf_id in ids:
                facts.named.setdefault(hf_id, Evidence(claim="named_in_readme", file=doc.path, field=f"line {n}",
                                                       value=line[:200]))
        for col in range(1, min(len(cells), len(header))):
            outcome = _outcome(header[col])
            if not outcome:
                continue
            for mode in (m.strip() for m in cells[col].split(";")):
                if "audio" in mode.lower():
                    facts.quality += [QualityRecord(checkpoint=hf_id, mode=mode, outcome=outcome, file=doc.path,
                                                    line=n, section=heading, column=header[col]) for hf_id in ids]


class _Limits(msgspec.Struct, kw_only=True):
    precision: str = ""
    tensor_parallel: int | None = None
    batch: int | None = None
    modes: list[str] = []
    paired_media: str = ""
    evidence: list[Evidence] = []


def _limits(doc: SourceDocument, sentence: str, marks: list[tuple[int, int]], found: _Limits) -> None:
    def cite(m: re.Match[str], claim: str) -> None:
        found.evidence.append(Evidence(claim=claim, file=doc.path, field=f"line {_line_at(marks, m.start())}",
                                       value=sentence[:240]))

    if standalone := _STANDALONE.search(sentence):
        if (m := _PRECISION.search(sentence)) and not found.precision:
            found.precision = m.group(1).lower()
            cite(m, "route:precision")
        if (m := _TP.search(sentence)) and found.tensor_parallel is None:
            found.tensor_parallel = int(m.group(1))
            cite(m, "route:tensor_parallel")
        if (m := _BATCH.search(sentence)) and found.batch is None:
            found.batch = int(m.group(1))
            cite(m, "route:batch")
        if "standalone" not in found.modes:
            found.modes.append("standalone")
            cite(standalone, "route:mode")
    if (m := _PAIRED_TEXT_ONLY.search(sentence)) and not found.paired_media:
        found.paired_media = "not mapped (paired builds are text-only)"
        cite(m, "route:paired")


def read_readme(doc: SourceDocument) -> ReadmeFacts:
    """Checkpoints, recorded audio results, route limits and audio sentences of one README."""
    facts = ReadmeFacts()
    found = _Limits()
    for kind, heading, block in _blocks(doc.data.decode("utf-8", "replace")):
        if kind == "table" and len(block) >= 2:
            _table(doc, heading, block, facts)
            continue
        for sentence, marks in _sentences(block):
            _limits(doc, sentence, marks, found)
            if m := _AUDIO.search(sentence):
                claim = "readme:audio-not-exposed" if _NEGATIVE.search(sentence) else "readme:audio"
                facts.audio_sentences.append(Evidence(claim=claim, file=doc.path,
                                                      field=f"line {_line_at(marks, m.start())}", value=sentence[:300]))
    if found.evidence:
        facts.limits = RouteLimits(precision=found.precision, tensor_parallel=found.tensor_parallel, batch=found.batch,
                                   modes=found.modes, paired_media=found.paired_media, evidence=found.evidence)
    return facts
