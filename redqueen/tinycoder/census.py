"""How many distinct programs the generator writes, and how hard each level is.

    python -m redqueen.tinycoder.census [--programs 200000] [--execute 100] [--seed 0]

Counting needs no execution: the candidate stream of :func:`~redqueen.tinycoder.corpus.candidates`
is generated and each program reduced to its canonical key (:mod:`redqueen.tinycoder.canonical`),
so the distinct count per level is exact for the candidates drawn. Difficulty is measured per
level on the stream's programs (mean AST nodes, source characters) and on a sample executed in
the sandbox: the share that is valid and not constant (what the corpus keeps), and the mean
number of statements executed per call, counted by ticks the program itself runs inside the
sandbox (which refuses tracing hooks).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from redqueen.tinycoder.canonical import canonical_key
from redqueen.tinycoder.corpus import candidates
from redqueen.tinycoder.programs import MAX_LEVEL, ProgramGenerator
from redqueen.verifiers import Executor, validate_programs
from redqueen.verifiers.formats import N_CODE_F_INPUTS

__all__ = ["LevelCensus", "count_distinct", "execute_sample", "main"]

# Appended to an instrumented program in the sandbox: runs f and returns the statements executed.
_STEP_COUNTER = """


_census_count = [0]


def _census_tick():
    _census_count[0] += 1


def _census_steps(*args):
    _census_count[0] = 0
    f(*args)
    return _census_count[0]
"""


class _Ticker(ast.NodeTransformer):
    """Puts a ``_census_tick()`` call before every statement inside a function.

    The sandbox refuses tracing hooks (a tracer sees the caller's frames), so lines executed are
    counted by the program itself: one tick per statement run.
    """

    def _ticked(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            tick = ast.Expr(ast.Call(ast.Name("_census_tick", ast.Load()), [], []))
            out += [ast.copy_location(tick, stmt), self.visit(stmt)]
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                if isinstance(node, ast.Module):
                    setattr(node, field, [self.visit(stmt) for stmt in body])
                else:
                    setattr(node, field, self._ticked(body))
        for field in ("handlers", "cases"):
            for child in getattr(node, field, None) or []:
                self.visit(child)
        return node


def instrument(source: str) -> str:
    """``source`` with a step tick before every statement inside its functions."""
    return ast.unparse(ast.fix_missing_locations(_Ticker().visit(ast.parse(source))))


@dataclass(frozen=True)
class LevelCensus:
    """Figures of one generator level.

    Args:
        level: The level.
        candidates: Programs drawn at this level.
        distinct: Distinct canonical forms among them not drawn at a lower level.
        mean_ast_nodes: Mean number of AST nodes per program.
        mean_chars: Mean source length.
        kept_share: Share of the executed sample that is valid and not constant (or None).
        mean_steps: Mean lines executed per call on the kept sample (or None).
    """

    level: int
    candidates: int
    distinct: int
    mean_ast_nodes: float
    mean_chars: float
    kept_share: float | None = None
    mean_steps: float | None = None


def count_distinct(
    n: int, *, seed: int = 0, levels: Sequence[int] | None = None
) -> list[LevelCensus]:
    """Draw ``n`` candidates of the corpus stream and count distinct canonical forms per level.

    Args:
        n: Candidates to draw (levels uniform over ``levels``).
        seed: Stream seed (the corpus seed).
        levels: Levels to draw from (default: all).
    """
    levels = tuple(levels or range(1, MAX_LEVEL + 1))
    keys: dict[int, set[bytes]] = {lv: set() for lv in levels}
    drawn = dict.fromkeys(levels, 0)
    nodes = dict.fromkeys(levels, 0)
    chars = dict.fromkeys(levels, 0)
    for program, _ in itertools.islice(candidates(seed, levels), n):
        lv = program.level
        drawn[lv] += 1
        keys[lv].add(canonical_key(program.source))
        nodes[lv] += sum(1 for _ in ast.walk(ast.parse(program.source)))
        chars[lv] += len(program.source)
    # A form drawn at two levels counts at the lower one only, so the per-level counts add up.
    for i, lv in enumerate(levels):
        for lower in levels[:i]:
            keys[lv] -= keys[lower]
    return [
        LevelCensus(
            level=lv,
            candidates=drawn[lv],
            distinct=len(keys[lv]),
            mean_ast_nodes=round(nodes[lv] / max(drawn[lv], 1), 1),
            mean_chars=round(chars[lv] / max(drawn[lv], 1), 1),
        )
        for lv in levels
    ]


def execute_sample(level: int, k: int, executor: Executor, *, seed: int = 0) -> tuple[float, float]:
    """(kept share, mean lines executed per call) of ``k`` programs of ``level``, in the sandbox."""
    rng = random.Random(seed)
    generator = ProgramGenerator(rng=random.Random(rng.getrandbits(64)))
    programs = [generator.program(level) for _ in range(k)]
    inputs = [[p.random_input(rng) for _ in range(N_CODE_F_INPUTS)] for p in programs]
    verdicts = validate_programs(
        [(p.source, i) for p, i in zip(programs, inputs, strict=True)], executor
    )
    kept = [
        (p, i[0])
        for p, i, v in zip(programs, inputs, verdicts, strict=True)
        if v.ok and len(set(v.outputs)) > 1
    ]
    results = executor.execute_many(
        [(instrument(p.source) + _STEP_COUNTER, f"_census_steps({i})") for p, i in kept]
    )
    steps = [int(r.value) for r in results if r.ok and r.value is not None]
    return len(kept) / max(k, 1), sum(steps) / max(len(steps), 1)


def main(argv: Sequence[str] | None = None) -> list[LevelCensus]:
    """Command line: print the census as JSON (one object per level, then the totals)."""
    parser = argparse.ArgumentParser(
        prog="python -m redqueen.tinycoder.census", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--programs", type=int, default=200_000, help="candidates to draw")
    parser.add_argument("--execute", type=int, default=100, help="programs per level to run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers (all cores)")
    args = parser.parse_args(argv)
    census = count_distinct(args.programs, seed=args.seed)
    if args.execute > 0:
        with Executor(workers=args.workers or os.cpu_count() or 1) as executor:
            for i, row in enumerate(census):
                kept, steps = execute_sample(row.level, args.execute, executor, seed=args.seed)
                census[i] = replace(row, kept_share=round(kept, 3), mean_steps=round(steps, 1))
    for row in census:
        print(json.dumps(asdict(row)))
    distinct = sum(row.distinct for row in census)
    print(json.dumps({"candidates": args.programs, "distinct": distinct}))
    return census


if __name__ == "__main__":
    main()
