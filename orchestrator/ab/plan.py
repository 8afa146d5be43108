"""`aqbench ab`'s block order: A (baseline) and B (candidate) alternate in a seeded, balanced order; pure."""

from __future__ import annotations

import random

from scipy.stats import t as student_t

__all__ = ["MIN_PAIRS", "block_order", "t_quantile", "pairs_of", "servers_text"]

# Fewer pairs than this leave every figure inconclusive: t with 1 degree of freedom is 6.3 at 90 %.
MIN_PAIRS = 3


# Blocks come in quads, ABBA or BAAB drawn per quad from the seed, and are paired (blocks 0-1, 2-3, ...): each pair
# holds one A and one B run back to back, and within a quad B runs later in one pair and earlier in the other, so a
# drift that is linear over a quad falls on both sides alike and cancels in the pairs' mean. An odd pair at the end
# gets AB or BA from the seed.
def block_order(pairs: int, seed: int) -> str:
    """The letters of 2 x `pairs` blocks, e.g. "ABBABAAB"."""
    if pairs < 1:
        raise ValueError(f"pairs must be at least 1, got {pairs}")
    draw = random.Random(seed)
    quads = "".join(draw.choice(("ABBA", "BAAB")) for _ in range(pairs // 2))
    return quads + (draw.choice(("AB", "BA")) if pairs % 2 else "")


def pairs_of(order: str) -> list[tuple[int, int]]:
    """(index of the A block, index of the B block) per pair of adjacent blocks."""
    return [(i, i + 1) if order[i] == "A" else (i + 1, i) for i in range(0, len(order) - 1, 2)]


def t_quantile(pairs: int, confidence: float) -> float | None:
    """Student's t at the two-sided `confidence` for a mean over `pairs` pair changes; None below MIN_PAIRS."""
    if pairs < MIN_PAIRS:
        return None
    return float(student_t.ppf(1.0 - (1.0 - confidence) / 2.0, pairs - 1))


def servers_text(sequential: bool, keep_servers: bool) -> str:
    """How a session runs its servers, as the plan line and ab.md say it."""
    return "one at a time, fresh every block" if sequential else \
        "both running all session" if keep_servers else "both running, fresh every pair"
