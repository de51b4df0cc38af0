"""Start and resume runs: the two ways a :class:`~redqueen.experiments.runner.Runner` is built.

* :func:`start_run` validates the configuration and builds the environment inside a temporary
  directory next to the target, renaming it into place only when everything worked — a failed
  start (SIGTERM included) removes what it created, and only that.
* :func:`resume_run` rebuilds the environment from ``config.yaml``, loads the latest checkpoint
  and cuts the logs back to it, so the continued run writes exactly what an uninterrupted run
  with the same seed would have written; given ``steps`` it continues to that total instead.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redqueen.experiments._staging import make_parents, restore_signals, sigterm_raises, undo_start
from redqueen.experiments.checkpoint import (
    Checkpoint,
    latest_checkpoint,
    remove_partial_checkpoints,
)
from redqueen.experiments.monitor import Monitor
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.runlock import RunLock
from redqueen.experiments.runner import RunError, Runner, check_member_ids

if TYPE_CHECKING:
    from redqueen.environments.base import Environment
    from redqueen.experiments.build import EnvironmentPlan
    from redqueen.experiments.config import ExperimentConfig

__all__ = ["check_run_target", "resume_run", "start_run"]

_log = logging.getLogger("redqueen.experiments.runner")


#: Settings a resumed run may change: how long, where and how it runs, what it logs; every
#: other setting shapes the state a checkpoint holds (``fixed_settings``).
RESUMABLE_SETTINGS = (
    "steps",
    "checkpoint_every",
    "logging",
    "engine",
    "model.device",
    "model.cpu_threads",
    "model.backend",
)


def fixed_settings(config: ExperimentConfig) -> dict[str, object]:
    """The resolved configuration less :data:`RESUMABLE_SETTINGS`: what a checkpoint records and
    a resume compares with ``config.yaml``."""
    resolved = config.to_yaml_dict()
    for key in RESUMABLE_SETTINGS:
        *parents, name = key.split(".")
        section: Any = resolved
        for parent in parents:
            section = section.get(parent, {}) if isinstance(section, dict) else {}
        if isinstance(section, dict):
            section.pop(name, None)
    return json.loads(json.dumps(resolved))  # as a checkpoint stores it: tuples become lists


def _first_difference(recorded: object, current: object, where: str = "") -> str | None:
    """The dotted key of the first setting that differs, with both values; None if none does."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        for key in sorted(set(recorded) | set(current), key=str):
            found = _first_difference(
                recorded.get(key, "<absent>"), current.get(key, "<absent>"), f"{where}{key}."
            )
            if found is not None:
                return found
        return None
    if recorded == current or (recorded != recorded and current != current):  # NaN is NaN
        return None
    return f"{where.rstrip('.')} is {current!r} there, but {recorded!r} in the checkpoint"


def _runner_settings(config: ExperimentConfig) -> dict[str, Any]:
    return {
        "steps": config.steps,
        "checkpoint_every": config.checkpoint_every,
        "keep_checkpoints": config.logging.keep_checkpoints,
        "settings": fixed_settings(config),
    }


def _monitor(
    config: ExperimentConfig, run_dir: RunDirectory, start_step: int, resolved: Mapping[str, Any]
) -> Monitor:
    logging = config.logging
    return Monitor(
        log_dir=run_dir.path,
        tensorboard=logging.tensorboard,
        wandb=logging.wandb,
        wandb_project=logging.wandb_project,
        wandb_entity=logging.wandb_entity,
        run_name=run_dir.path.name,
        config=resolved,
        start_step=start_step,
    )


def check_run_target(out: str | os.PathLike[str]) -> Path:
    """``out`` as the path of a new run directory: absent or an empty folder, with no file where
    one of its folders should be.

    Raises:
        RunError: If ``out`` exists and is not an empty folder, or a file stands where a folder
            above it should be.
    """
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise RunError(f"run directory {target} already exists and is not empty")
    for parent in target.parents:  # the nearest one that exists must be a folder
        if parent.exists():
            if not parent.is_dir():
                raise RunError(f"cannot create {target}: {parent} is not a directory")
            break
    return target


def start_run(
    config: ExperimentConfig,
    out: str | os.PathLike[str],
    *,
    plots: bool = True,
    plugins: Sequence[str] = (),
    plan: EnvironmentPlan | None = None,
) -> Runner:
    """Create a run directory for ``config`` at ``out`` and return a runner ready to start.

    Everything that can fail on bad input — the target path, the environment build — happens
    inside ``.<name>.tmp-<pid>`` next to ``out``; only a complete directory is renamed into place.

    Args:
        config: A validated :class:`~redqueen.experiments.config.ExperimentConfig`.
        out: The run directory to create; it must not exist or be empty.
        plots: Write plots when the run ends.
        plugins: Plug-in modules or files the caller imported; recorded in ``plugins.json``
            so that ``redqueen resume`` imports them again.
        plan: ``config`` already checked (:func:`redqueen.experiments.build.plan_environment`);
            ``None``: checked here.

    Raises:
        RunError: If ``out`` exists and is not empty, or its parent is not a directory.
        ConfigError: If the configuration does not fit the registries or its environment
            (:func:`redqueen.experiments.check_config`).
    """
    from redqueen.experiments.build import plan_environment

    if plan is None:
        plan = plan_environment(config)  # bad input fails before any folder is made
    target = check_run_target(out)
    staging = target.parent / f".{target.name}.tmp-{os.getpid()}"
    created: list[Path] = []  # parent folders this call made, outermost first
    made_staging = False
    env: Environment | None = None
    lock: RunLock | None = None
    previous = sigterm_raises()
    try:
        try:
            make_parents(target.parent, created)
            staging.mkdir()
            made_staging = True
        except OSError as error:  # named by the target, not the hidden staging folder
            raise RunError(f"cannot create {target}: {error.strerror or error}") from None
        lock = RunLock(staging)  # stays held through the rename below
        run_dir = RunDirectory(staging)
        resolved = config.to_yaml_dict()
        run_dir.write_config(resolved)
        if plugins:
            run_dir.write_plugins(plugins)
        run_dir.open_logs()
        run_dir.close_logs()
        env = plan.build()
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        undo_start(env, lock, staging if made_staging else None, created)
        raise
    finally:
        restore_signals(previous)
    run_dir = RunDirectory(target)
    return Runner(
        env=env,
        run_dir=run_dir,
        monitor=_monitor(config, run_dir, 0, resolved),
        plots=plots,
        lock=lock,
        **_runner_settings(config),
    )


def resume_run(
    path: str | os.PathLike[str],
    *,
    plots: bool = True,
    steps: int | None = None,
    trust_remote: bool = False,
    checked: Callable[[], None] | None = None,
) -> Runner:
    """Rebuild a run's environment from ``config.yaml`` and restore its latest checkpoint.

    The run directory's lock is taken first, so nothing is touched while another process runs
    it. Logs are cut back to the checkpoint's offsets (to nothing when there is no checkpoint
    yet, in which case the run starts over from its seed), and ``lineage.csv`` and
    ``population/`` are rewritten from the restored state: every file describes the
    checkpoint's step.

    Args:
        path: The run directory.
        plots: Write plots when the run ends.
        steps: New total number of steps (``None``: the configured total). It is written into
            ``config.yaml``, so a later plain resume continues to the same total.
        trust_remote: Use the settings of ``config.yaml`` that reach other machines (a Ray
            cluster, W&B); without it they are refused (:mod:`._run_config`).
        checked: Called once the configuration, the checkpoint and the logs are checked, before
            the model loads (``redqueen resume`` says its first line there, so bad input is
            the one line said).

    Raises:
        RunDirectoryError: If ``path`` is not a run directory, or another process holds it.
        CheckpointError: If the latest checkpoint is damaged or not data-only.
        ConfigError: If ``config.yaml`` no longer validates, has a ``base:`` key, or sets
            unconfirmed settings that reach other machines.
        RunError: If the checkpoint does not fit the configuration, or ``steps`` is below the
            checkpoint's step.
    """
    from redqueen.experiments._run_config import load_run_config
    from redqueen.experiments.build import plan_environment

    run_dir = RunDirectory(path)
    run_dir.require()
    lock = RunLock(run_dir.path)
    env: Environment | None = None
    try:
        config = load_run_config(run_dir, trust_remote=trust_remote)
        remove_partial_checkpoints(run_dir.checkpoints_dir)
        ckpt = latest_checkpoint(run_dir.checkpoints_dir)
        start = ckpt.step if ckpt is not None else 0
        if steps is not None:
            config = _with_steps(config, steps, start, run_dir)
        plan = plan_environment(config)  # the configuration's own faults are named first
        if ckpt is not None:
            _check_settings(ckpt, config, run_dir)
        state = ckpt.load_state() if ckpt is not None else None
        run_dir.check_logs(ckpt.offsets if ckpt is not None else {})  # before the model loads
        if checked is not None:
            checked()
        env = plan.build()
        if ckpt is not None and state is not None:
            _restore(env, ckpt, state, run_dir)
        _truncate_to(run_dir, ckpt)
        runner = Runner(
            env=env,
            run_dir=run_dir,
            monitor=_monitor(config, run_dir, start, config.to_yaml_dict()),
            plots=plots,
            last_checkpoint_step=ckpt.step if ckpt is not None else None,
            elapsed=float(ckpt.extra.get("elapsed", 0.0)) if ckpt is not None else 0.0,
            lock=lock,
            **_runner_settings(config),
        )
        # lineage.csv and population/ may be newer than the checkpoint if the run died in between.
        with run_dir.publishing():
            runner.write_lineage_and_population()
        if steps is not None:  # last: a resume refused on the way leaves config.yaml as it was
            run_dir.write_config(config.to_yaml_dict())
    except BaseException:
        if env is not None:
            env.close()
        lock.release()
        raise
    return runner


def _with_steps(
    config: ExperimentConfig, steps: int, start: int, run_dir: RunDirectory
) -> ExperimentConfig:
    """``config`` with a new total of ``steps``.

    Raises:
        RunError: If ``steps`` is below the ``start`` steps already run.
        ConfigError: If the total is out of range.
    """
    from redqueen.experiments.config import ConfigError, validate_config

    if isinstance(steps, bool) or not isinstance(steps, int):
        raise ConfigError(f"--steps: must be a whole number, got {steps!r}")
    if steps < start:
        raise RunError(f"--steps {steps} is below the {start} steps {run_dir.path} has already run")
    resolved = config.to_yaml_dict()
    resolved["steps"] = int(steps)
    return validate_config(resolved, label="--steps")


def _check_settings(ckpt: Checkpoint, config: ExperimentConfig, run_dir: RunDirectory) -> None:
    """``config.yaml`` still says what the checkpoint ran with (checkpoints that record it).

    Raises:
        RunError: Naming the first setting that differs.
    """
    recorded = ckpt.extra.get("settings")
    if not isinstance(recorded, dict):
        return  # written before checkpoints recorded their settings
    difference = _first_difference(recorded, fixed_settings(config))
    if difference is not None:
        raise RunError(
            f"{ckpt.path} does not fit {run_dir.config_path}: {difference}; was config.yaml "
            f"edited after the run started? (a resume may change only "
            f"{', '.join(RESUMABLE_SETTINGS)})"
        )


def _restore(
    env: Environment, ckpt: Checkpoint, state: dict[str, Any], run_dir: RunDirectory
) -> None:
    """Load a checkpoint's state into ``env`` and check its member ids.

    Raises:
        RunError: If the state does not fit the environment the configuration builds.
    """
    try:
        env.load_state_dict(state)
    except Exception as error:
        detail = error.args[0] if isinstance(error, KeyError) and error.args else error
        raise RunError(
            f"{ckpt.path} does not fit {run_dir.config_path} ({type(error).__name__}: {detail}); "
            "was config.yaml edited after the run started?"
        ) from None
    check_member_ids(env, str(ckpt.path / "state.json"))


def _truncate_to(run_dir: RunDirectory, ckpt: Checkpoint | None) -> None:
    """Cut the logs back to the checkpoint's offsets (to nothing without a checkpoint: the run
    starts over from its seed, which is said when steps are discarded)."""
    if ckpt is None:
        logged = run_dir.read_log_bytes("metrics").count(b"\n")
        if logged:
            _log.warning(
                "%s has no checkpoint: the run starts over from its seed, and the %d "
                "step(s) in its logs are discarded",
                run_dir.checkpoints_dir,
                logged,
            )
    run_dir.truncate_logs(ckpt.offsets if ckpt is not None else {})
