"""The experiment runner: steps an environment and keeps its run directory up to date.

The runner knows nothing of teachers, students or tasks. It calls
:meth:`~redqueen.environments.Environment.step`, appends the rows the step reports to the logs,
and every ``checkpoint_every`` steps writes a checkpoint together with ``lineage.csv`` and the
living members' adapters, so the run directory always describes its latest checkpoint.

Two entry points in :mod:`redqueen.experiments.launch` build a :class:`Runner` (the package
``redqueen.experiments`` exports both):

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
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redqueen.experiments._safe_paths import check_member_id
from redqueen.experiments.checkpoint import (
    Checkpoint,
    save_checkpoint,
)
from redqueen.experiments.monitor import Monitor
from redqueen.experiments.rundir import RunDirectory
from redqueen.experiments.runlock import RunLock
from redqueen.settings import LoggingSettings

#: The one place the logging defaults are written.
_LOGGING = LoggingSettings()

if TYPE_CHECKING:  # the environments package pulls in the engine; the runner only drives it
    from redqueen.environments.base import Environment, StepRecord
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
        settings: The configuration the run's state depends on, recorded in each checkpoint
            (``None``: not recorded).
    """

    def __init__(
        self,
        *,
        env: Environment,
        run_dir: RunDirectory,
        steps: int,
        checkpoint_every: int = 1,
        keep_checkpoints: int = _LOGGING.keep_checkpoints,
        monitor: Monitor | None = None,
        plots: bool = True,
        last_checkpoint_step: int | None = None,
        elapsed: float = 0.0,
        lock: RunLock | None = None,
        settings: Mapping[str, object] | None = None,
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
        #: What the run's state depends on, recorded in every checkpoint so that a resume can
        #: tell a ``config.yaml`` edited after the start (``launch.fixed_settings``).
        self.settings = dict(settings) if settings is not None else None

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
                extra={"elapsed": self.elapsed}
                if self.settings is None
                else {"elapsed": self.elapsed, "settings": self.settings},
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
            return [
                f"plots failed ({type(error).__name__}: {error}); retry with: redqueen plot {self.run_dir.path}"
            ]

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
