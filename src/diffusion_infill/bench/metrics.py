"""Per-case measurements of one completion engine and their aggregates, shared by the
benchmarks so every engine is measured by the same code."""

from __future__ import annotations

import difflib
import itertools
import statistics
import time
from dataclasses import asdict

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion import copied_lines
from diffusion_infill.engine.requests import REVISED, InfillRequest


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def duplicated_closer(prefix: str, text: str, suffix: str, expected: str) -> bool:
    """The insertion closes itself the string or bracket that the first closer after the cursor
    closes in the file as written (`foo(` + `x)` + `)`, or `"` + `nt" "` + `"`). A closer's
    character that closes nothing there, such as a `)` in a comment or a `]` inside a string, is
    text, and one the original text typed itself is its own."""
    return syntax_check.retyped_closer(prefix, text, suffix, "python", expected) is not None


def step_times(stamps: list[float]) -> list[float]:
    """The time between consecutive drafts, each one forward pass (a denoising step or a decoding
    step) with the work that turns it into a draft; the first draft, which also waits for the
    prefill, is not counted (`stamps`: when each non-final draft arrived)."""
    return [later - earlier for earlier, later in itertools.pairwise(stamps)]


def request_of(case) -> InfillRequest:
    """What every engine is asked for a benchmark case (all cases are Python)."""
    return InfillRequest(case.prefix, case.suffix, "python")


def run_case(engine, case, tokenizer, prefill_passes: int, start_text: str | None = None) -> dict:
    """Completes one case. `prefill_passes`: forward passes before the first draft that the
    drafts' step count leaves out (the diffusion engine's prefix encoding)."""
    request = request_of(case)
    started = time.perf_counter()
    stamps, draft = [], None
    for draft in engine.complete(request, start_text=start_text):  # noqa: B007 (the last one is final)
        stamps.append(time.perf_counter())
    total = time.perf_counter() - started
    first = stamps[0] - started
    steps = step_times(stamps[:-1] if draft.final else stamps)
    tokens = len(tokenizer.encode(draft.text, add_special_tokens=False))
    passes = draft.step + prefill_passes
    return {
        "name": case.name,
        "kind": getattr(case, "kind", "line"),
        "text": draft.text,
        "expected": case.expected,
        "exact": draft.text.strip() == case.expected.strip(),
        "similarity": difflib.SequenceMatcher(None, draft.text.strip(), case.expected.strip()).ratio(),
        "valid": syntax_check.check(case.prefix, draft.text, case.suffix, "python").valid,
        "cut": bool(draft.evidence and draft.evidence.cut),  # the closure check cut the text short
        "duplicated_closer": duplicated_closer(case.prefix, draft.text, case.suffix, case.expected),
        "forward_passes": passes,
        "tokens": tokens,
        "tokens_per_forward": tokens / max(passes, 1),
        # where the diffusion engine's denoising passes went (engine.completion.sampler.PassCounts); the
        # baseline's every pass writes a token and none follows its END
        "pass_counts": asdict(draft.passes) if draft.passes else None,
        "source": draft.source,
        "drafted": bool(copied_lines.candidates(request)),  # some line of the code could be copied here
        "prefill_ms": draft.prefill_ms,
        "first_draft_ms": first * 1000,
        "step_ms": [step * 1000 for step in steps],
        "total_ms": total * 1000,
    }


def _passes(row: dict, kind: str) -> int:
    return row["pass_counts"][kind] if row.get("pass_counts") else 0


def aggregate(rows: list[dict]) -> dict:
    totals = [r["total_ms"] for r in rows]
    result = {
        "cases": len(rows),
        "exact_match": sum(r["exact"] for r in rows) / len(rows),
        "edit_similarity_mean": statistics.fmean(r["similarity"] for r in rows),
        "edit_similarity_median": statistics.median(r["similarity"] for r in rows),
        "closure_valid": sum(r["valid"] for r in rows) / len(rows),
        "duplicated_closer_rate": sum(r["duplicated_closer"] for r in rows) / len(rows),
        "forward_passes_mean": statistics.fmean(r["forward_passes"] for r in rows),
        "tokens_per_forward_mean": statistics.fmean(r["tokens_per_forward"] for r in rows),
        "passes_without_reveal_mean": statistics.fmean(_passes(r, "without_reveal") for r in rows),
        "passes_after_final_mean": statistics.fmean(_passes(r, "after_final") for r in rows),
        # length: small diffusion models end insertions early; these show it beside the truth
        "insertion_chars_mean": statistics.fmean(len(r["text"].strip()) for r in rows),
        "expected_chars_mean": statistics.fmean(len(r["expected"].strip()) for r in rows),
        "empty_rate": sum(not r["text"].strip() for r in rows) / len(rows),
        "prefill_ms_median": statistics.median(r["prefill_ms"] for r in rows),
        # over every step of every case; None when no completion took two steps
        "step_ms_median": statistics.median(steps) if (steps := [s for r in rows for s in r["step_ms"]]) else None,
        "first_draft_ms_p50": percentile([r["first_draft_ms"] for r in rows], 0.5),
        "latency_ms_p50": percentile(totals, 0.5),
        "latency_ms_p95": percentile(totals, 0.95),
    }
    drafted = [r for r in rows if r.get("drafted")]
    if drafted:  # the cases where a line copied from the code exists: what judging it buys
        result["where_a_draft_exists"] = {
            "cases": len(drafted),
            "exact_match": sum(r["exact"] for r in drafted) / len(drafted),
            "edit_similarity_mean": statistics.fmean(r["similarity"] for r in drafted),
            "tokens_per_forward_mean": statistics.fmean(r["tokens_per_forward"] for r in drafted),
            "answered_with_a_judged_line": sum(r.get("source") == REVISED for r in drafted),
        }
    kinds = sorted({r["kind"] for r in rows})
    if len(kinds) > 1:
        result["by_kind"] = {
            kind: {
                "cases": len(subset),
                "exact_match": sum(r["exact"] for r in subset) / len(subset),
                "edit_similarity_mean": statistics.fmean(r["similarity"] for r in subset),
            }
            for kind in kinds
            if (subset := [r for r in rows if r["kind"] == kind])
        }
    return result
