"""The experiment runner: steps an environment and keeps its run directory up to date.

The runner knows nothing of teachers, students or tasks. It calls
:meth:`~redqueen.environments.Environment.step`, appends the rows the step reports to the logs,
and every ``checkpoint_every`` steps writes a checkpoint together with ``lineage.csv`` and the
living members' adapters, so the run directory always describes its latest checkpoint.

Two entry points build a :class:`Runner`:

* :func:`start_run` validates the configuration and builds the environment inside a temporary
  directory next to the target, renaming it into place only when everything worked — a failed
  start (SIGTERM included) removes what it created, and only that.
* :func:`resume_run` rebuilds the environment from ``config.yaml``, loads the latest checkpoint
  and cuts the logs back to it, so the continued run writes exactly what an uninterrupted run
  with the same seed would have written; given ``steps`` it continues to that total instead.

Both hold the run directory's :class:`~redqueen.experiments.runlock.RunLock` until
:meth:`Runner.close`, so no second process can write to the same directory meanwhile.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redqueen.experiments._safe_paths import check_member_id
from redqueen.experiments._staging import make_parents, restore_signals, sigterm_raises, undo_start
from redqueen.experiments.checkpoint import (
    Checkpoint,
    latest_checkpoint,
    remove_partial_checkpoints,
    save_checkpoint,
)
from redqueen.experiments.monitor import Monitor
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.runlock import RunLock

if TYPE_CHECKING:  # the environments package pulls in the engine; the runner only drives it
    from redqueen.environments.base import Environment, StepRecord
    from redqueen.experiments.build import EnvironmentPlan
    from redqueen.experiments.config import ExperimentConfig
    from redqueen.genomes import LoRAGenome

#: Called after every step with the step's record and the runner.
StepCallback = Callable[["StepRecord", "Runner"], None]

_log = logging.getLogger(__name__)


class RunError(ValueError):
    """A run cannot start or resume; the message is one line naming the path or field."""


@dataclass(frozen=True)
class RunResult:
    """How a call to :meth:`Runner.run` ended.

    Attributes:
        path: The run directory.
        steps_done: Environment steps completed so far (over all resumes).
        steps_total: Steps the configuration asks for.
        interrupted: Whether SIGINT, SIGTERM (or :meth:`Runner.request_stop`) ended the run early.
        last_metrics: The metrics row of the last step, empty if no step ran.
        plot_notes: One line per plot that was skipped, and why.
        stop_signal: The signal that stopped the run (``signal.SIGINT`` or ``signal.SIGTERM``),
            ``None`` when none did.
    """

    path: Path
    steps_done: int
    steps_total: int
    interrupted: bool
    last_metrics: dict[str, Any] = field(default_factory=dict)
    plot_notes: list[str] = field(default_factory=list)
    stop_signal: int | None = None

    @property
    def complete(self) -> bool:
        """Whether every configured step has run."""
        return self.steps_done >= self.steps_total


def _living_members(env: Environment) -> list[tuple[str, LoRAGenome]]:
    return [(str(ind.id), ind.genome) for ind in env.league.population.living]


def check_member_ids(env: Environment, where: str) -> None:
    """Refuse an environment whose living or snapshot members' ids are not plain names.

    Ids become folder names in ``population/`` and ``snapshots/``; this runs before anything
    is written, so a crafted ``state.json`` (or a plug-in environment) cannot steer a write.

    Raises:
        UnsafePathError: Naming ``where`` and the id.
    """
    for ind in env.league.population.living:
        check_member_id(ind.id, where)
    for members in env.league.snapshots().values():
        for member in members:
            check_member_id(member.id, where)


def _base_model_path(env: Environment) -> str | None:
    """The base model the environment's adapters sit on, as a path PEFT can load directly."""
    path = env.base_model_path
    if path is None:
        return None
    resolved = Path(path).expanduser()
    return str(resolved.resolve()) if resolved.exists() else str(path)


class Runner:
    """Drives one environment through the configured number of steps.

    Args:
        env: The environment, already restored when resuming.
        run_dir: Where the logs, checkpoints, lineage, adapters and plots go.
        steps: Total number of steps the run should reach.
        checkpoint_every: Checkpoint after every this many steps (0: only at the end).
        keep_checkpoints: Keep the newest this many checkpoints (0: keep all).
        monitor: Live-monitoring sinks (TensorBoard, W&B), or ``None``.
        plots: Write ``plots/*.png`` when the run ends.
        last_checkpoint_step: Step of the checkpoint this runner starts from (resume).
        elapsed: Wall-clock seconds already spent by earlier processes of this run.
        lock: The run directory's lock, released by :meth:`close`.
    """

    def __init__(
        self,
        *,
        env: Environment,
        run_dir: RunDirectory,
        steps: int,
        checkpoint_every: int = 1,
        keep_checkpoints: int = 3,
        monitor: Monitor | None = None,
        plots: bool = True,
        last_checkpoint_step: int | None = None,
        elapsed: float = 0.0,
        lock: RunLock | None = None,
    ) -> None:
        if steps < 0:
            raise RunError(f"steps must be >= 0, got {steps}")
        if checkpoint_every < 0:
            raise RunError(f"checkpoint_every must be >= 0, got {checkpoint_every}")
        self.env = env
        self.run_dir = run_dir
        self.steps = int(steps)
        self.checkpoint_every = int(checkpoint_every)
        self.keep_checkpoints = int(keep_checkpoints)
        self.monitor = monitor
        self.plots = plots
        self.elapsed = float(elapsed)
        self.last_metrics: dict[str, Any] = {}
        self._last_checkpoint_step = last_checkpoint_step
        self._stop = threading.Event()
        self._lock = lock
        self.stop_signal: int | None = None

    @property
    def step_count(self) -> int:
        """Steps completed so far."""
        return int(self.env.step_count)

    def request_stop(self) -> None:
        """Stop after the step in progress, writing a checkpoint first (what SIGINT does)."""
        self._stop.set()

    def checkpoint(self) -> Checkpoint:
        """Write a checkpoint of the current state plus ``lineage.csv`` and ``population/``.

        Readers holding :meth:`RunDirectory.snapshot` are waited for, so they never see the
        three parts from different steps.
        """
        self.run_dir.sync_logs()
        state = self.env.state_dict()
        self.run_dir.check_links("checkpoints")
        with self.run_dir.publishing():
            self.write_lineage_and_population()
            ckpt = save_checkpoint(
                self.run_dir.checkpoints_dir,
                step=self.step_count,
                state=state,
                offsets=self.run_dir.log_offsets(),
                extra={"elapsed": self.elapsed},
                keep=self.keep_checkpoints or None,
            )
        self._last_checkpoint_step = ckpt.step
        return ckpt

    def write_lineage_and_population(self) -> None:
        """Rewrite ``lineage.csv`` and the living members' adapters from the environment, and
        write its new snapshots (``snapshots/``).

        Every member id is checked before anything is written (:func:`check_member_ids`).
        """
        check_member_ids(self.env, "the environment")
        league = self.env.league
        league.lineage.update_fitness(league.population.living)  # final fitness columns
        self.run_dir.write_lineage(league.lineage)
        self.run_dir.write_population(_living_members(self.env), _base_model_path(self.env))
        self.write_snapshots()

    def write_snapshots(self) -> None:
        """Write the environment's snapshots not yet in ``snapshots/`` (each once, as soon as
        it is taken, so none is lost however few the hall of fame keeps in memory)."""
        from redqueen.experiments.snapshots import write_snapshots

        write_snapshots(self.run_dir.path, self.env.league.snapshots(), _base_model_path(self.env))

    def _write_step(self, record: StepRecord, seconds: float) -> None:
        metrics = dict(record.metrics)
        metrics.setdefault("step", record.step)
        metrics.setdefault("seconds", seconds)
        self.run_dir.append("metrics", [metrics])
        self.run_dir.append("tasks", [{"step": record.step, **row} for row in record.tasks])
        self.run_dir.append("ratings", [{"step": record.step, **row} for row in record.ratings])
        self.last_metrics = metrics
        if self.monitor is not None:
            self.monitor.log(record.step, metrics)

    def run(self, callbacks: Iterable[StepCallback] = ()) -> RunResult:
        """Step until the configured total, a stop request, SIGINT or SIGTERM; then finish cleanly.

        The first SIGINT or SIGTERM (what batch schedulers send before pre-empting a job) lets
        the step in progress finish, writes a checkpoint and returns with ``interrupted=True``;
        a second one raises :class:`KeyboardInterrupt` at once.
        """
        callbacks = list(callbacks)
        previous = self._install_signals()
        try:
            self.run_dir.open_logs()
            while self.step_count < self.steps and not self._stop.is_set():
                start = time.perf_counter()
                record = self.env.step()
                seconds = time.perf_counter() - start
                self.elapsed += seconds
                self._write_step(record, seconds)
                self.write_snapshots()
                for callback in callbacks:
                    callback(record, self)
                if self.checkpoint_every and self.step_count % self.checkpoint_every == 0:
                    self.checkpoint()
            if self._last_checkpoint_step != self.step_count:
                self.checkpoint()
            else:
                with self.run_dir.publishing():
                    self.write_lineage_and_population()
            notes = self._plot() if self.plots else []
        finally:
            self._restore_signals(previous)
            self.run_dir.close_logs()
        return RunResult(
            path=self.run_dir.path,
            steps_done=self.step_count,
            steps_total=self.steps,
            interrupted=self.step_count < self.steps,
            last_metrics=dict(self.last_metrics),
            plot_notes=notes,
            stop_signal=self.stop_signal,
        )

    def close(self) -> None:
        """Close the monitor and the environment and release the run directory (safe to call twice)."""
        try:
            if self.monitor is not None:
                self.monitor.close()
            self.run_dir.close_logs()
            self.env.close()
        finally:
            if self._lock is not None:
                self._lock.release()

    def _plot(self) -> list[str]:
        from redqueen.experiments.plots import make_plots

        try:
            return make_plots(self.run_dir.path).notes
        except Exception as error:  # the run itself is complete and checkpointed by now
            return [f"plots failed ({type(error).__name__}: {error}); retry with: redqueen plot {self.run_dir.path}"]

    def _install_signals(self) -> dict[int, Any] | None:
        if threading.current_thread() is not threading.main_thread():
            return None

        def handler(signum: int, frame: Any) -> None:
            if self.stop_signal is not None:  # the second one: stop now
                raise KeyboardInterrupt
            self.stop_signal = signum
            self.request_stop()
            signal.signal(signal.SIGINT, signal.default_int_handler)

        return {signum: signal.signal(signum, handler) for signum in _STOP_SIGNALS}

    @staticmethod
    def _restore_signals(previous: dict[int, Any] | None) -> None:
        for signum, handler in (previous or {}).items():
            signal.signal(signum, handler)


#: Signals that stop a run after the step in progress: Ctrl-C, and what schedulers send.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _runner_settings(config: ExperimentConfig) -> dict[str, Any]:
    return {
        "steps": config.steps,
        "checkpoint_every": config.checkpoint_every,
        "keep_checkpoints": config.logging.keep_checkpoints,
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
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise RunError(f"run directory {target} already exists and is not empty")
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
        except OSError as error:
            raise RunError(f"cannot create {staging}: {error.strerror or error}") from None
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

    Raises:
        RunDirectoryError: If ``path`` is not a run directory, or another process holds it.
        CheckpointError: If the latest checkpoint is damaged or not data-only.
        ConfigError: If ``config.yaml`` no longer validates, has a ``base:`` key, or sets
            unconfirmed settings that reach other machines.
        RunError: If the checkpoint does not fit the configuration, or ``steps`` is below the
            checkpoint's step.
    """
    from redqueen.experiments._run_config import load_run_config
    from redqueen.experiments.build import build_environment

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
        state = ckpt.load_state() if ckpt is not None else None
        env = build_environment(config)
        if ckpt is not None and state is not None:
            _restore(env, ckpt, state, run_dir)
        if steps is not None:
            run_dir.write_config(config.to_yaml_dict())
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
    from redqueen.experiments.config import ConfigError, ExperimentConfig

    if steps < start:
        raise RunError(f"--steps {steps} is below the {start} steps {run_dir.path} has already run")
    resolved = config.to_yaml_dict()
    resolved["steps"] = int(steps)
    try:
        return ExperimentConfig.model_validate(resolved)
    except ValueError as error:
        raise ConfigError(f"--steps {steps}: {' '.join(str(error).split())}") from None


def _restore(env: Environment, ckpt: Checkpoint, state: dict[str, Any], run_dir: RunDirectory) -> None:
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
                run_dir.checkpoints_dir, logged,
            )
    run_dir.truncate_logs(ckpt.offsets if ckpt is not None else {})
