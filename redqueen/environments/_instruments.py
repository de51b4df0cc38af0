"""Instruments that can show an arms race (or a collapse) in the code domain.

Two measurements of what teachers propose, each independent of the population's own
judgement (a third, the frozen base model's solve rate, is taken by the game for every domain:
:func:`~redqueen.environments._round.grade_base`):

- :func:`program_measures`: size and complexity of a valid task's program (radon's cyclomatic
  complexity, Halstead volume and line count; AST depth and node count);
- :func:`behaviour_cell`: a discretisation of task space, so that coverage (how many distinct
  kinds of task the run has produced) can be counted over time.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from redqueen.environments._domain import difficulty_bin

if TYPE_CHECKING:
    from redqueen.environments._round import PlayedTask

__all__ = ["MEASURE_KEYS", "behaviour_cell", "program_measures"]

#: Program measures written to every valid task's row of ``tasks.jsonl``.
MEASURE_KEYS: tuple[str, ...] = ("ast_depth", "ast_nodes", "cyclomatic", "halstead_volume", "loc")

#: Program features that name a behaviour cell, each a set of AST node types.
FEATURES: dict[str, tuple[type[ast.AST], ...]] = {
    "loop": (ast.For, ast.While),
    "branch": (ast.If, ast.IfExp),
    "comprehension": (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp),
    "helper": (ast.Lambda, ast.ClassDef),
}


def program_measures(program: str, metrics: Mapping[str, float]) -> dict[str, float]:
    """The measures in :data:`MEASURE_KEYS` of a valid program.

    ``cyclomatic``, ``halstead_volume`` and ``ast_depth`` are the verifier's
    :func:`~redqueen.verifiers.complexity` values (radon and :mod:`ast`); ``loc`` is radon's
    raw line count; ``ast_nodes`` counts the nodes of the parsed program.

    Args:
        program: Program text (it parses: the task was verified).
        metrics: What :func:`redqueen.verifiers.complexity` returned for it.
    """
    from radon.raw import analyze

    return {
        "ast_depth": float(metrics["ast_depth"]),
        "ast_nodes": float(sum(1 for _ in ast.walk(ast.parse(program)))),
        "cyclomatic": float(metrics["cyclomatic"]),
        "halstead_volume": float(metrics["halstead_volume"]),
        "loc": float(analyze(program).loc),
    }


def program_features(program: str) -> list[str]:
    """Names of the :data:`FEATURES` the program uses; ``helper`` also counts a second
    function definition (a helper beside the entry function ``f``)."""
    nodes = list(ast.walk(ast.parse(program)))
    found = [name for name, types in FEATURES.items() if any(isinstance(n, types) for n in nodes)]
    defs = sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in nodes)
    if defs > 1 and "helper" not in found:
        found.append("helper")
    return found


def behaviour_cell(item: PlayedTask) -> str | None:
    """The behaviour cell of a valid task, ``None`` for an invalid one.

    The discretisation, ``"<task type>/c<complexity bin>/d<difficulty bin>/<features>"``:

    - complexity bin: ``floor(2 * log2(1 + ast_nodes))``, half-octaves of program size, so a
      program twice as large lands two bins higher (capped at 24);
    - difficulty bin: the base model's solve rate, ``0`` (never solved), ``1`` (always
      solved) or ``m`` (in between); ``x`` when the probe is off;
    - features: the sorted :data:`FEATURES` the program uses, joined by ``+`` (``-`` if none).
    """
    if not item.valid or item.program is None or not item.measures:
        return None
    size = min(int(2 * math.log2(1.0 + item.measures["ast_nodes"])), 24)
    difficulty = difficulty_bin(item.base_solve_rate)
    features = "+".join(sorted(program_features(item.program))) or "-"
    return f"{item.task_type}/c{size}/d{difficulty}/{features}"
