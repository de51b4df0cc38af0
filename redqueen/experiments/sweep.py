"""Sweeps: a grid of configurations times seeds, run as Ray Tune trials (``redqueen sweep``),
or one after another in this process when Ray is not installed.

Each trial is one ordinary run directory, ``<out>/<condition>/seed<k>/``, written by the same
runner as ``redqueen run``, so ``plot``, ``resume``, ``eval`` and ``compare`` read it as they
read any run. ``<out>/sweep.json`` records the grid, the seeds and where every trial lives.
Running the same sweep again continues it: finished trials are kept, interrupted ones resume
from their latest checkpoint, missing ones start. Ray runs on the local machine unless an
address is given (``--address ray://head:10001`` or ``auto``); trials need one CPU each. Ray
runs quietly: no progress tables, no loggers of its own (so no TensorBoard hint at its folder);
one line per finished trial says how many are done, with or without Ray.

A sweep directory is data like a run directory: ``sweep.json`` may name only folders inside
it, no condition or trial folder may be a symbolic link (checked before any trial starts), and
``sweep.json`` is written from the directory's handle, never through a link. A trial that is
continued uses the settings of its ``config.yaml`` that reach other machines (a Ray cluster,
W&B) only when they are those of the sweep's own configuration.

Example::

    redqueen sweep surrogate --seeds 3 --grid evolution.selection=tournament,nsga2 \\
        --set steps=20 --out runs/selection-study
    redqueen compare runs/selection-study --metric best_rating
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from redqueen.experiments._safe_paths import UnsafePathError, check_links, read_in, write_in

_log = logging.getLogger(__name__)

#: File at the top of a sweep directory naming its conditions and trials.
MANIFEST = "sweep.json"


@dataclass(frozen=True)
class Trial:
    """One run of a sweep.

    Attributes:
        condition: The condition's name, e.g. ``"evolution.selection=nsga2"``.
        seed: The run's seed.
        overrides: Every ``key=value`` override the run applies to the base config.
        path: The run directory.
    """

    condition: str
    seed: int
    overrides: tuple[str, ...]
    path: Path


def parse_grid(specs: Sequence[str]) -> dict[str, list[str]]:
    """``["a.b=1,2", "c=x,y"]`` -> ``{"a.b": ["1", "2"], "c": ["x", "y"]}`` (values stay YAML text;
    commas inside ``{}``, ``[]`` or quotes belong to the value).

    Raises:
        ValueError: Naming the spec, if it has no ``=``, no key, no value or repeats a key.
    """
    grid: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, values = spec.partition("=")
        key = key.strip()
        parts = [v.strip() for v in _split_top_level(values)] if sep else []
        if not sep or not key or not parts or any(not v for v in parts):
            raise ValueError(f"--grid {spec!r}: expected key=value1,value2,...")
        if key in grid:
            raise ValueError(f"--grid {spec!r}: key {key} is given twice")
        grid[key] = parts
    return grid


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets, braces and quotes: ``"1,{a: 1, b: 2}"`` -> 2 values."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


def condition_name(assignment: Mapping[str, str]) -> str:
    """A directory-safe name of one grid point, e.g. ``evolution.selection=nsga2``."""
    if not assignment:
        return "base"
    text = ",".join(f"{k}={v}" for k, v in assignment.items())
    return re.sub(r"[^A-Za-z0-9._=,+-]", "_", text)


#: Most seeds a sweep runs per grid point.
MAX_SEEDS = 10_000


def plan_trials(
    source: str, grid: Mapping[str, Sequence[str]], seeds: int, out: Path, overrides: Sequence[str] = ()
) -> list[Trial]:
    """Every (grid point, seed) as a :class:`Trial`; each config is validated here, so a bad
    key or value fails before anything runs.

    Raises:
        ValueError: If ``seeds`` < 1 or > :data:`MAX_SEEDS`, ``seed`` is in the grid or the
            overrides (each trial's seed is its own), or two grid points would share a folder.
            ConfigError: One line naming the field, for a bad override.
    """
    from redqueen.experiments._config_checks import check_config
    from redqueen.experiments.config import load_config

    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if seeds > MAX_SEEDS:  # each seed is a run; a mistyped count would plan for ever
        raise ValueError(f"--seeds must be <= {MAX_SEEDS}, got {seeds}")
    # Each trial's seed= comes last and would silently replace the grid's or --set's.
    if "seed" in grid:
        raise ValueError("--grid seed: a sweep runs seeds 0..N-1 at every grid point; use --seeds")
    if any(o.partition("=")[0].strip() == "seed" for o in overrides):
        raise ValueError("--set seed: a sweep runs seeds 0..N-1 at every grid point; use --seeds")
    keys = list(grid)
    trials = []
    points: dict[str, dict[str, str]] = {}
    for values in itertools.product(*(grid[k] for k in keys)):
        assignment = dict(zip(keys, values, strict=True))
        name = condition_name(assignment)
        if name in points:  # a value given twice, or two that differ only where a folder cannot
            given = ", ".join(f"{k}={v}" for k, v in assignment.items())
            taken = ", ".join(f"{k}={v}" for k, v in points[name].items())
            raise ValueError(f"--grid: {taken} and {given} would share the folder {name}")
        points[name] = assignment
        for seed in range(seeds):
            applied = (*overrides, *(f"{k}={v}" for k, v in assignment.items()), f"seed={seed}")
            check_config(load_config(source, list(applied)))
            trials.append(Trial(name, seed, applied, out / name / f"seed{seed}"))
    return trials


def run_trial(
    source: str,
    overrides: Sequence[str],
    path: str | os.PathLike[str],
    *,
    plots: bool = True,
    plugins: Sequence[str] = (),
) -> dict[str, object]:
    """Run (or continue) one trial's run directory to its last step; returns its last metrics.

    A directory with a ``config.yaml`` is resumed (a finished run returns at once), otherwise
    the run starts. Plots are drawn at the end when ``plots`` is set, as for ``redqueen run``.
    ``plugins`` (modules or ``.py`` files, as ``--plugin`` takes them) are imported first, in
    this process (a Ray trial runs in a worker of its own), and recorded in the trial's
    ``plugins.json``; the installed ``redqueen.plugins`` entry points are loaded too.
    """
    from redqueen.experiments._run_config import load_run_config, remote_settings
    from redqueen.experiments.config import load_config
    from redqueen.experiments.launch import resume_run, start_run
    from redqueen.experiments.plugins import import_plugin, load_plugins
    from redqueen.experiments.rundir import RunDirectory

    load_plugins()
    recorded = [import_plugin(spec) for spec in plugins]
    path = Path(path)
    if (path / "config.yaml").is_file():
        recorded_remote = remote_settings(load_run_config(RunDirectory(path), trust_remote=True))
        own_remote = remote_settings(load_config(source, list(overrides)))
        runner = resume_run(path, plots=plots, trust_remote=recorded_remote == own_remote)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        runner = start_run(load_config(source, list(overrides)), path, plots=plots, plugins=recorded)
    try:
        result = runner.run()
    finally:
        runner.close()
    return {"steps_done": result.steps_done, "complete": result.complete, **result.last_metrics}


class _TrialSpec(TypedDict):
    """One trial as Ray Tune hands it to :func:`_trainable` (see ``_run_on_ray``)."""

    source: str
    overrides: list[str]
    path: str
    plots: bool
    plugins: list[str]


class _TrialParams(TypedDict):
    trial: _TrialSpec


def _trainable(params: _TrialParams) -> None:
    """The Ray Tune function trainable: one trial, its final metrics reported once."""
    from ray import tune

    trial = params["trial"]
    metrics = run_trial(
        trial["source"], trial["overrides"], trial["path"], plots=trial["plots"],
        plugins=trial.get("plugins", ()),
    )
    tune.report({k: v for k, v in metrics.items() if isinstance(v, (int, float, bool))})


def write_manifest(out: Path, source: str, grid: Mapping[str, Sequence[str]], seeds: int,
                   overrides: Sequence[str], trials: Sequence[Trial],
                   plugins: Sequence[str] = ()) -> Path:
    """Write ``sweep.json``: the base config, grid, seeds, overrides, plug-ins and every trial's path."""
    data = {
        "config": source,
        "grid": {k: list(v) for k, v in grid.items()},
        "seeds": seeds,
        "overrides": list(overrides),
        "plugins": list(plugins),
        "trials": [{"condition": t.condition, "seed": t.seed, "overrides": list(t.overrides),
                    "path": str(t.path.relative_to(out))} for t in trials],
    }
    return write_in(out, MANIFEST, (json.dumps(data, indent=2) + "\n").encode())


def read_manifest(out: str | os.PathLike[str]) -> dict[str, list[Path]]:
    """Condition -> run directories of a sweep directory, in seed order.

    ``sweep.json`` is read without following a link, and each trial's path must be a plain
    relative path inside the sweep directory, reached through no symbolic link.

    Raises:
        ValueError: If ``sweep.json`` is missing or malformed, or names a folder outside the
            sweep directory (the file is named).
        UnsafePathError: If a trial's folder is reached through a symbolic link.
    """
    path = Path(out) / MANIFEST
    try:
        data = json.loads(read_in(out, MANIFEST).decode("utf-8"))
        trials = [(str(trial["condition"]), trial["path"]) for trial in data["trials"]]
    except UnsafePathError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a sweep manifest ({type(error).__name__}: {error})") from None
    groups: dict[str, list[Path]] = {}
    for condition, rel in trials:
        if not isinstance(rel, str) or not _inside(rel):
            raise ValueError(f"{path}: trial path {rel!r} is not a folder inside the sweep directory")
        groups.setdefault(condition, []).append(Path(out) / rel)
    check_links(out, *(p.relative_to(out) for runs in groups.values() for p in runs))
    return groups


def _inside(rel: str) -> bool:
    """Whether ``rel`` is a relative path that stays inside the folder it is relative to."""
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and all(p not in ("..", ".", "") for p in parts)


def run_sweep(
    source: str,
    *,
    out: str | os.PathLike[str],
    seeds: int = 1,
    grid: Mapping[str, Sequence[str]] | None = None,
    overrides: Sequence[str] = (),
    address: str | None = None,
    cpus_per_trial: float = 1.0,
    max_concurrent: int = 0,
    plots: bool = True,
    plugins: Sequence[str] = (),
) -> dict[str, list[Path]]:
    """Run every (grid point, seed) of ``source`` as Ray Tune trials; returns condition -> runs.

    Args:
        source: A preset name or a YAML file, as for ``redqueen run``.
        out: The sweep directory (created; an existing sweep there is continued).
        seeds: Seeds ``0 .. seeds-1`` per grid point (the config's ``seed`` key).
        grid: Dotted key -> values (YAML text), crossed with each other.
        overrides: ``key=value`` applied to every trial before the grid's values.
        address: A Ray cluster address; ``None`` starts Ray on this machine.
        cpus_per_trial: CPUs Ray reserves per trial.
        max_concurrent: At most this many trials at once (0: as many as the CPUs allow).
        plots: Draw each run's plots when it ends.
        plugins: Plug-in modules or ``.py`` files, imported here before the trials are planned
            (so the grid may name what they register) and again in every trial, and recorded
            in each trial's ``plugins.json`` and in ``sweep.json``.

    Raises:
        ValueError / ConfigError: One line naming the field (a non-finite ``cpus_per_trial``,
            an ``out`` that is a file, ...), before Ray or any trial starts.
        RuntimeError: If a trial fails (the trial's run directory is named).
    """
    if not (isinstance(cpus_per_trial, int | float) and 0 < cpus_per_trial < math.inf):
        raise ValueError(
            f"--cpus-per-trial: expected a positive number of CPUs, got {cpus_per_trial!r}"
        )
    out = Path(out).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a sweep directory")
    if Path(source).suffix in (".yaml", ".yml"):
        if not Path(source).is_file():
            raise ValueError(f"{source}: file not found")
        source = str(Path(source).resolve())
    from redqueen.experiments.plugins import import_plugin, load_plugins

    load_plugins()
    plugins = [import_plugin(spec) for spec in plugins]
    grid = dict(grid or {})
    trials = plan_trials(source, grid, seeds, out, overrides)
    if out.is_dir():  # a sweep being continued: no trial may be reached through a link
        check_links(out, MANIFEST, *(t.path.relative_to(out) for t in trials))
        _check_continues(out, source, grid, overrides, trials)
    try:
        import ray.tune  # noqa: F401
    except ImportError:
        ray_started: bool | None = None
    else:  # before anything is written: a bad address leaves the sweep directory as it was
        ray_started = _start_ray(address)
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_manifest(out, source, grid, seeds, overrides, trials, plugins)
        _log.info("sweep %s: %d conditions x %d seeds = %d trials", out, len(trials) // seeds, seeds, len(trials))
        if ray_started is None:
            _log.info("Ray is not installed: the trials run one after another "
                      "(pip install 'redqueen[ray]' runs them side by side)")
            _run_in_turn(source, trials, plots=plots, plugins=plugins)
        else:
            _run_on_ray(source, trials, cpus_per_trial=cpus_per_trial,
                        max_concurrent=max_concurrent, plots=plots, plugins=plugins, out=out)
    finally:
        if ray_started:
            import ray

            ray.shutdown()
    groups: dict[str, list[Path]] = {}
    for trial in trials:
        groups.setdefault(trial.condition, []).append(trial.path)
    return groups


def _trial_done(done: int, total: int, label: str) -> None:
    _log.info("trials done: %d/%d (%s)", done, total, label)


def _run_in_turn(source: str, trials: Sequence[Trial], *, plots: bool, plugins: Sequence[str]) -> None:
    """Every trial in this process, one after another (the sweep without Ray).

    Raises:
        RuntimeError: If a trial fails (its run directory is named).
        ValueError: If SIGINT or SIGTERM stopped a trial (checkpointed; the same command continues).
    """
    for done, trial in enumerate(trials, 1):
        try:
            metrics = run_trial(source, trial.overrides, trial.path, plots=plots, plugins=plugins)
        except (ValueError, OSError):
            raise
        except Exception as error:
            raise RuntimeError(f"sweep trial {trial.path} failed: {type(error).__name__}: {error}") from None
        if not metrics["complete"]:
            raise ValueError(f"sweep stopped in trial {trial.path} after {done - 1} of {len(trials)} trials "
                             "(checkpoint written); run the same command again to continue")
        _trial_done(done, len(trials), f"{trial.condition} seed {trial.seed}")


def _check_continues(
    out: Path, source: str, grid: Mapping[str, Sequence[str]], overrides: Sequence[str],
    trials: Sequence[Trial],
) -> None:
    """A sweep directory that already holds ``sweep.json`` is continued only by the same sweep
    (more seeds may be added: every trial it lists must still be planned).

    Raises:
        ValueError: Naming the directory and what differs.
    """
    if not (out / MANIFEST).exists():
        return
    try:
        recorded = json.loads(read_in(out, MANIFEST).decode("utf-8"))
        listed = {str(trial["path"]) for trial in recorded["trials"]}
        same = (
            recorded["config"] == source
            and {k: list(v) for k, v in recorded["grid"].items()} == {k: list(v) for k, v in grid.items()}
            and list(recorded["overrides"]) == list(overrides)
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{out / MANIFEST}: not a sweep manifest ({type(error).__name__}: {error})") from None
    planned = {str(t.path.relative_to(out)) for t in trials}
    if not same or not listed <= planned:
        raise ValueError(
            f"{out} holds another sweep (its {MANIFEST} records another config, grid, overrides "
            "or more seeds); give a new --out, or the same command to continue it"
        )


def _start_ray(address: str | None) -> bool:
    """Connect to (or start) Ray; whether this call started it (and so shuts it down).

    Raises:
        ValueError: If Ray cannot start or reach ``address`` (one line).
    """
    import ray

    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, runtime_env={"env_vars": _env_for_workers()})
    except (ConnectionError, RuntimeError, ValueError, OSError) as error:
        where = f"address {address!r}" if address else "this machine"
        raise ValueError(f"cannot start Ray on {where}: {str(error).splitlines()[0] if str(error) else type(error).__name__}") from None
    return True


def _run_on_ray(source: str, trials: Sequence[Trial], *, cpus_per_trial: float,
                max_concurrent: int, plots: bool, plugins: Sequence[str], out: Path) -> None:
    """Every trial as a Ray Tune trial (Ray already started); Tune's own output and loggers are off."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the legacy reporter at verbose=0 prints nothing
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")  # no CSV/JSON/TensorBoard in .tune
    from ray import tune

    class _Progress(tune.Callback):
        done = 0

        def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
            self.done += 1
            _trial_done(self.done, len(trials), Path(trial.config["trial"]["path"]).relative_to(out).as_posix())

    tuner = tune.Tuner(
        tune.with_resources(_trainable, {"cpu": cpus_per_trial}),
        param_space={"trial": tune.grid_search([
            {"source": source, "overrides": list(t.overrides), "path": str(t.path),
             "plots": plots, "plugins": list(plugins)}
            for t in trials
        ])},
        tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent or None, reuse_actors=True,
                                    trial_dirname_creator=lambda trial: f"trial_{trial.trial_id}"),
        run_config=tune.RunConfig(name="tune", storage_path=str(out / ".tune"), verbose=0,
                                  callbacks=[_Progress()]),
    )
    results = tuner.fit()
    # ResultGrid is indexed, not iterable by declaration.
    failed = [results[i] for i in range(len(results)) if results[i].error is not None]
    if failed:
        config = failed[0].config
        assert config is not None  # Tune reports every trial with the config it ran
        path = config["trial"]["path"]
        raise RuntimeError(f"sweep trial {path} failed: {type(failed[0].error).__name__}: {failed[0].error}")


def _env_for_workers() -> dict[str, str]:
    """Variables Ray's workers need to import the same redqueen (e.g. a source checkout)."""
    return {k: os.environ[k] for k in ("PYTHONPATH", "HF_HUB_OFFLINE") if k in os.environ}


def sweep_grid_summary(groups: Mapping[str, Sequence[Path]]) -> str:
    """One line per condition: its name and run directories (for the command's output)."""
    return "\n".join(f"{name}: {', '.join(str(p) for p in paths)}" for name, paths in groups.items())

