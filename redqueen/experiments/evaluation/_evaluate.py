"""Benchmark every living member of a run, the bare base model and any baselines."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from redqueen.experiments.evaluation._contestants import (
    Contestant,
    baseline_contestants,
    population_contestants,
    resolve_model,
    run_model,
)
from redqueen.experiments.evaluation._report import EvalReport, MemberScore, judged_details
from redqueen.experiments.evaluation._suite import BenchmarkSuite, Problem, make_suite
from redqueen.experiments.rundir import RunDirectory, RunDirectoryError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from redqueen.engine import AdapterHost
    from redqueen.genomes import LoRAGenome

_log = logging.getLogger(__name__)

#: ``model.dtype`` values of a run configuration (torch is imported only when evaluating).
_DTYPES = ("float32", "bfloat16", "float16")


def fit_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str, budget: int) -> tuple[str, bool]:
    """``prompt`` cut from the left so that it encodes to at most ``budget`` tokens (special
    tokens included, as the host encodes it); also whether it was cut.

    Keeping the end keeps the function signature and docstring the model must continue.
    """
    with_special = len(tokenizer(prompt)["input_ids"])
    if with_special <= budget:
        return prompt, False
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    keep = max(1, budget - (with_special - len(ids)))
    text = tokenizer.decode(ids[len(ids) - keep :], skip_special_tokens=True)
    return str(text), True  # one sequence of ids decodes to one string


def context_length(host: AdapterHost) -> int | None:
    """The host model's context window in tokens, if it says."""
    model = getattr(host, "model", None)
    config = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    limit = getattr(getattr(host, "tokenizer", None), "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit < 1_000_000 else None


def evaluate_run(
    run_dir: str | Path,
    suite: str | BenchmarkSuite,
    *,
    baselines: Sequence[str | Path] = (),
    limit: int | None = None,
    device: str = "cpu",
    batch_size: int | None = None,
    workers: int | None = None,
    write: bool = True,
    host: AdapterHost | None = None,
    cpu_threads: int | None = None,
) -> EvalReport:
    """Greedy pass@1 of every living member, the bare base model and each baseline.

    All (model, problem) pairs are generated through one :class:`~redqueen.engine.AdapterHost`
    in mixed batches (each row names its adapter), so a population costs about as much as one
    model per batch. Answers are checked in the sandboxed :class:`~redqueen.verifiers.Executor`.

    Args:
        run_dir: A run directory (``config.yaml``, ``lineage.csv``, ``population/<id>/``).
        suite: A registered suite name (``humaneval``, ``code_output``) or a suite instance.
        baselines: Exported adapter folders or run directories (e.g. a self-play run).
        limit: Only the first ``limit`` problems.
        device: Torch device for generation.
        batch_size: Rows per generation call (default: the host's ``max_batch_size``).
        workers: Sandbox worker processes (default: the executor's).
        write: Write ``eval_<suite>.json`` and ``eval_<suite>.md`` into ``run_dir``.
        host: An existing host of the run's base model, to reuse a loaded model.
        cpu_threads: Torch threads while generating on the CPU (default: the run's
            ``model.cpu_threads``; small models are fastest on one). Restored afterwards.

    Raises:
        RunDirectoryError: If the run directory, a baseline or an adapter cannot be read.
        redqueen._registry.UnknownNameError: If the suite name is not registered.
    """

    suite = make_suite(suite)
    RunDirectory(run_dir).require()  # before the lock file is made: a folder that is no run stays as it was
    # Members, roles and adapters of one step, even while the run goes on writing its next ones.
    with RunDirectory(run_dir).snapshot():
        contestants = population_contestants(run_dir)
        contestants.append(Contestant("base", "base", "base", None))
        for baseline in baselines:
            contestants += baseline_contestants(baseline)
        genomes = _read_genomes(contestants)
    model_name, section = run_model(run_dir)
    dtype = section.get("dtype")
    if host is None and dtype is not None and dtype not in _DTYPES:
        raise RunDirectoryError(
            f"{run_dir}/config.yaml: model.dtype {dtype!r} is not one of {sorted(_DTYPES)}"
        )
    report = evaluate_contestants(
        contestants, genomes, suite, model=model_name, section=section, label=str(run_dir),
        limit=limit, device=device, batch_size=batch_size, workers=workers, host=host,
        cpu_threads=cpu_threads,
    )
    if write:
        report.write(run_dir)
    return report


def evaluate_contestants(
    contestants: Sequence[Contestant],
    genomes: Sequence[LoRAGenome | None],
    suite: BenchmarkSuite,
    *,
    model: str,
    section: Mapping[str, Any],
    label: str,
    limit: int | None = None,
    device: str = "cpu",
    batch_size: int | None = None,
    workers: int | None = None,
    host: AdapterHost | None = None,
    cpu_threads: int | None = None,
) -> EvalReport:
    """Greedy pass@1 of each contestant (its genome on ``model``, ``None``: the bare model).

    The shared core of :func:`evaluate_run` and :func:`evaluate_model`. A suite that can
    ``judge`` answers (status and parsed answer) and name ``groups`` of a problem (level, task
    type) gets them in the report's ``extra``: ``answers`` per model and problem, and a
    ``breakdown`` per model and group.

    Args:
        contestants: The models to score.
        genomes: One genome per contestant (``None`` for the bare base model).
        suite: The benchmark suite.
        model: Base model name or path (``tiny-coder``: the shipped model).
        section: Model settings (``dtype``, ``target_modules``, ``backend``, ``cpu_threads``).
        label: What the report says was evaluated (a run directory, or ``model``).
        limit, device, batch_size, workers, host, cpu_threads: As for :func:`evaluate_run`.

    Raises:
        RunDirectoryError: If an adapter does not fit the model.
        ValueError: If the suite has no problems.
    """
    import torch

    problems = suite.problems(limit)
    if not problems:
        raise ValueError(f"benchmark {suite.name}: no problems (limit={limit})")

    start = time.perf_counter()
    if host is None:
        from redqueen.engine import AdapterHost

        dtype = section.get("dtype")
        host = AdapterHost(
            resolve_model(model),
            device=device,
            dtype=getattr(torch, dtype) if dtype else None,
            target_modules=section.get("target_modules"),
            backend=section.get("backend", "auto"),
        )
    if batch_size is None:
        batch_size = int(getattr(host, "max_batch_size", 32))
    adapter_ids = _load_adapters(host, contestants, genomes)
    # Said once the model and its adapters have loaded: a model that does not load, or an
    # adapter that does not fit it, is the one line said.
    _log.info(
        "%s: %d models x %d problems of %s", label, len(contestants), len(problems), suite.name
    )
    prompts, truncated, max_new_tokens = _prompts(host, suite, problems)
    if cpu_threads is None:
        cpu_threads = section.get("cpu_threads")
    threads = torch.get_num_threads()
    try:
        if cpu_threads and str(getattr(host, "device", device)).startswith("cpu"):
            from redqueen.experiments._cpu import resolve_cpu_threads

            torch.set_num_threads(resolve_cpu_threads(cpu_threads) or threads)
        texts = _generate(host, suite, prompts, adapter_ids, max_new_tokens, batch_size)
    finally:
        torch.set_num_threads(threads)
        for adapter_id in adapter_ids:
            if adapter_id is not None:
                host.remove_adapter(adapter_id)
    scores, unrunnable, details = _check(suite, problems, contestants, texts, workers)
    return EvalReport(
        suite=suite.name,
        run_dir=label,
        model=model,
        problems=tuple(problem.id for problem in problems),
        scores=tuple(scores),
        truncated_prompts=truncated,
        seconds=time.perf_counter() - start,
        extra={
            "max_new_tokens": max_new_tokens,
            "device": device,
            "unrunnable_in_sandbox": unrunnable,
            **details,
        },
    )


def _read_genomes(contestants: Sequence[Contestant]) -> list[LoRAGenome | None]:
    """Each contestant's genome (``None`` for the bare base model), read before any model loads."""
    from redqueen.genomes import LoRAGenome

    genomes: list[LoRAGenome | None] = []
    for contestant in contestants:
        if contestant.adapter is None:
            genomes.append(None)
            continue
        try:
            genomes.append(LoRAGenome.from_peft(contestant.adapter))
        except Exception as error:  # any unreadable adapter is a bad input, named by folder
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise RunDirectoryError(
                f"{contestant.adapter}: cannot load adapter ({first})"
            ) from None
    return genomes


def _load_adapters(
    host: AdapterHost, contestants: Sequence[Contestant], genomes: Sequence[LoRAGenome | None]
) -> list[str | None]:
    ids: list[str | None] = []
    for index, (contestant, genome) in enumerate(zip(contestants, genomes, strict=True)):
        if genome is None:
            ids.append(None)
            continue
        adapter_id = f"eval{index}"
        try:
            host.add_adapter(adapter_id, genome)
        except Exception as error:
            for loaded in ids:
                if loaded is not None:
                    host.remove_adapter(loaded)
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise RunDirectoryError(
                f"{contestant.adapter}: adapter does not fit the base model ({first})"
            ) from None
        ids.append(adapter_id)
    return ids


def _prompts(
    host: AdapterHost, suite: BenchmarkSuite, problems: Sequence[Problem]
) -> tuple[list[str], int, int]:
    """Prompts fitted to the context window, the number cut, and the generation budget."""
    max_new_tokens = suite.max_new_tokens
    window = context_length(host)
    if window is None:
        return [problem.prompt for problem in problems], 0, max_new_tokens
    # Never let the answer budget eat more than half the window.
    max_new_tokens = min(max_new_tokens, window // 2)
    budget = window - max_new_tokens
    prompts, truncated = [], 0
    for problem in problems:
        prompt, cut = fit_prompt(host.tokenizer, problem.prompt, budget)
        prompts.append(prompt)
        truncated += cut
    return prompts, truncated, max_new_tokens


def _generate(
    host: AdapterHost,
    suite: BenchmarkSuite,
    prompts: Sequence[str],
    adapter_ids: Sequence[str | None],
    max_new_tokens: int,
    batch_size: int,
) -> list[list[str]]:
    """Generated texts, ``texts[contestant][problem]``, in mixed-adapter batches."""
    from redqueen.engine import SamplingParams

    sampling = SamplingParams(
        max_new_tokens=max_new_tokens, temperature=0.0, stop=tuple(suite.stop)
    )
    # Problem-major order: a batch holds every model on the same few prompts (mixed adapters,
    # little padding).
    rows = [(c, p) for p in range(len(prompts)) for c in range(len(adapter_ids))]
    texts: list[list[str]] = [[""] * len(prompts) for _ in adapter_ids]
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task(f"{suite.name}: generating", total=len(rows))
        for begin in range(0, len(rows), max(1, batch_size)):
            batch = rows[begin : begin + batch_size]
            generations = host.generate(
                [prompts[p] for _, p in batch], [adapter_ids[c] for c, _ in batch], sampling
            )
            for (c, p), generation in zip(batch, generations, strict=True):
                texts[c][p] = generation.text
            progress.advance(task, len(batch))
    return texts


def _check(
    suite: BenchmarkSuite,
    problems: Sequence[Problem],
    contestants: Sequence[Contestant],
    texts: Sequence[Sequence[str]],
    workers: int | None,
) -> tuple[list[MemberScore], list[str], dict[str, object]]:
    """Scores per contestant, the problems the sandbox cannot run at all (if the suite can
    tell: see ``HumanEvalSuite.unrunnable``), and per-problem answers and breakdowns (if the
    suite can ``judge``: see ``ProblemFileSuite``)."""
    from redqueen.verifiers import Executor

    flat_problems = [problem for _ in contestants for problem in problems]
    flat = [
        suite.completion(problem, text)
        for row in texts
        for problem, text in zip(problems, row, strict=True)
    ]
    preload = tuple(getattr(suite, "preload", ()))
    judge = getattr(suite, "judge", None)
    judged: list[tuple[str, str | None]] | None = None
    with Executor(workers=workers, timeout=suite.timeout, preload=preload) as executor:
        if callable(judge):
            judged = list(judge(flat_problems, flat, executor))
            verdicts = [status == "correct" for status, _ in judged]
        else:
            verdicts = suite.check(flat_problems, flat, executor)
        probe = getattr(suite, "unrunnable", None)
        unrunnable = list(probe(problems, executor)) if callable(probe) else []
    scores = []
    n = len(problems)
    for index, contestant in enumerate(contestants):
        passed = verdicts[index * n : (index + 1) * n]
        scores.append(
            MemberScore(
                member=contestant.member,
                role=contestant.role,
                source=contestant.source,
                passed=sum(passed),
                total=n,
                solved=tuple(
                    problem.id for problem, ok in zip(problems, passed, strict=True) if ok
                ),
            )
        )
    details: dict[str, object] = {}
    if judged is not None:
        groups = getattr(suite, "groups", None)
        details = judged_details(scores, problems, judged, groups if callable(groups) else None)
    return scores, unrunnable, details
