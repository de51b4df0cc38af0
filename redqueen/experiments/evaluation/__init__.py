"""Benchmark evaluation of evolved populations.

Offers:

- :class:`BenchmarkSuite` (protocol), :class:`Problem` and the registry :data:`SUITES`
  (``@SUITES.register("name")`` on a suite class); shipped suites:

  - ``humaneval`` (:class:`HumanEvalSuite`): HumanEval's 164 problems, greedy pass@1,
    checked in the sandboxed executor;
  - ``code_output`` (:class:`CodeOutputSuite`): held-out procedural output-prediction tasks in
    the environment's own prompt format, on which the shipped ``tiny-coder`` scores; a frozen
    set that ``python -m redqueen.experiments.evaluation._held_out`` rebuilds from a base model's
    training corpus, excluding every canonical form (names and formatting normalised) in it.

- :class:`ProblemFileSuite` and :func:`read_problem_file`: a researcher's own code_o / code_i
  problems from a JSON-lines file (outputs computed in the sandbox when absent);
  ``redqueen eval RUN --problems FILE.jsonl``.
- :func:`evaluate_run`: every living member of a run, the bare base model and any baselines,
  in mixed-adapter batches; writes ``eval_<suite>.json`` and ``eval_<suite>.md``.
- :func:`evaluate_model`: a model without a run directory, bare and with each given adapter
  folder (``redqueen eval --model ID --adapter DIR --problems FILE``).
- :class:`EvalReport`, :class:`MemberScore`, :class:`Summary`: the records it returns.
- :func:`compare_runs`: the paper's table (population mean, weakest member, self-play baseline).
- :func:`redqueen.experiments.evaluation.command.eval_command`: the ``redqueen eval`` command.

``LM_EVAL.md`` next to this file explains how to run lm-evaluation-harness on exported members.
"""

from __future__ import annotations

from redqueen.experiments.evaluation._code_output import CodeOutputSuite
from redqueen.experiments.evaluation._compare import compare_runs, comparison_table, split_baselines
from redqueen.experiments.evaluation._evaluate import evaluate_run
from redqueen.experiments.evaluation._humaneval import HUMANEVAL_STOPS, HumanEvalSuite
from redqueen.experiments.evaluation._problem_file import ProblemFileSuite, read_problem_file
from redqueen.experiments.evaluation._report import EvalReport, MemberScore, Summary, summarize
from redqueen.experiments.evaluation._standalone import evaluate_model
from redqueen.experiments.evaluation._suite import (
    SUITES,
    BenchmarkSuite,
    Problem,
    make_suite,
    truncate_at_stops,
)

__all__ = [
    "HUMANEVAL_STOPS",
    "SUITES",
    "BenchmarkSuite",
    "CodeOutputSuite",
    "EvalReport",
    "HumanEvalSuite",
    "MemberScore",
    "Problem",
    "ProblemFileSuite",
    "Summary",
    "compare_runs",
    "comparison_table",
    "evaluate_model",
    "evaluate_run",
    "make_suite",
    "read_problem_file",
    "split_baselines",
    "summarize",
    "truncate_at_stops",
]
