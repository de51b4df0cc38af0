"""Benchmark a model and adapter folders without a run directory (``redqueen eval --model``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from redqueen.experiments._safe_paths import check_tree
from redqueen.experiments.evaluation._contestants import Contestant
from redqueen.experiments.evaluation._evaluate import _read_genomes, evaluate_contestants
from redqueen.experiments.evaluation._report import EvalReport
from redqueen.experiments.evaluation._suite import BenchmarkSuite, make_suite
from redqueen.experiments.rundir import RunDirectoryError

if TYPE_CHECKING:
    from redqueen.engine import AdapterHost


def adapter_contestants(adapters: Sequence[str | Path]) -> list[Contestant]:
    """One contestant per PEFT adapter folder, labelled by the folder's name (made unique).

    Raises:
        RunDirectoryError: If a folder has no ``adapter_config.json``.
        UnsafePathError: If a folder holds a symbolic link or special file.
    """
    contestants: list[Contestant] = []
    seen: set[str] = {"base"}
    for adapter in adapters:
        path = Path(adapter)
        check_tree(path)
        if not (path / "adapter_config.json").is_file():
            raise RunDirectoryError(f"adapter {path}: not a PEFT adapter folder (no adapter_config.json)")
        label, copy = path.name or str(path), 1
        while label in seen:  # two folders of one name: the second is ``name#2``
            copy += 1
            label = f"{path.name}#{copy}"
        seen.add(label)
        contestants.append(Contestant(label, "adapter", "baseline", path))
    return contestants


def evaluate_model(
    model: str,
    suite: str | BenchmarkSuite,
    *,
    adapters: Sequence[str | Path] = (),
    out: str | Path | None = None,
    limit: int | None = None,
    device: str = "cpu",
    batch_size: int | None = None,
    workers: int | None = None,
    host: AdapterHost | None = None,
) -> EvalReport:
    """Greedy pass@1 of ``model`` without an adapter and with each of ``adapters``.

    For a researcher's own problems and adapters that did not come from a run (an exported
    member, a fine-tune): the same generation and sandboxed checks as :func:`evaluate_run`.

    Args:
        model: A Hugging Face model id or local path; ``tiny-coder`` is the shipped model.
        suite: A registered suite name or a suite instance (e.g. a ``ProblemFileSuite``).
        adapters: PEFT adapter folders for ``model``.
        out: Folder for ``eval_<suite>.json`` and ``eval_<suite>.md`` (``None``: not written).
        limit, device, batch_size, workers, host: As for :func:`evaluate_run`.

    Raises:
        RunDirectoryError: If an adapter folder cannot be read or does not fit the model.
        redqueen._registry.UnknownNameError: If the suite name is not registered.
    """
    suite = make_suite(suite)
    contestants = [Contestant("base", "base", "base", None), *adapter_contestants(adapters)]
    genomes = _read_genomes(contestants)
    report = evaluate_contestants(
        contestants, genomes, suite, model=model, section={}, label=model, limit=limit,
        device=device, batch_size=batch_size, workers=workers, host=host,
    )
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        report.write(out)
    return report
