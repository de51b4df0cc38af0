"""Live monitoring: each step's metrics also go to TensorBoard and Weights & Biases.

The run directory's ``metrics.jsonl`` is the record; these sinks are for watching a run as it
goes. TensorBoard is used whenever it is installed (``torch.utils.tensorboard`` needs the
``tensorboard`` package, which the base install does not bring) unless the configuration turns
it off; Weights & Biases only when the
configuration enables it and ``wandb`` is installed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from redqueen.settings import LoggingSettings

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

_log = logging.getLogger(__name__)
#: The settings schema's defaults, written once there.
_DEFAULTS = LoggingSettings()


def tensorboard_available() -> bool:
    """Whether ``torch.utils.tensorboard`` can be imported here."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        return False
    return True


def wandb_available() -> bool:
    """Whether the ``wandb`` package is installed."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        return False
    return True


def _scalars(metrics: Mapping[str, object]) -> dict[str, float]:
    out = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            out[key] = float(value)
    return out


class Monitor:
    """Sends step metrics to the live-monitoring backends that are enabled and installed.

    Args:
        log_dir: The run directory; TensorBoard events go to ``<log_dir>/tensorboard``.
        tensorboard: ``None`` (the default): use TensorBoard when installed, silently skip it
            when not; ``True``: use it, with a warning when it is not installed; ``False``: never.
        wandb: Use Weights & Biases (when installed).
        wandb_project: W&B project name.
        wandb_entity: W&B entity (team or user); ``None`` uses the default.
        run_name: Name (and W&B id) of the run, so a resumed run continues the same W&B run.
        config: Resolved configuration, recorded by W&B.
        start_step: First step this process will log; TensorBoard drops events from an
            interrupted earlier process at or after it, so resumed curves have no doubles.

    Attributes:
        notes: One line per backend that was asked for but is not available (also logged as
            a warning).
    """

    def __init__(
        self,
        *,
        log_dir: str | Path,
        tensorboard: bool | None = _DEFAULTS.tensorboard,
        wandb: bool = _DEFAULTS.wandb,
        wandb_project: str = _DEFAULTS.wandb_project,
        wandb_entity: str | None = _DEFAULTS.wandb_entity,
        run_name: str | None = None,
        config: Mapping[str, object] | None = None,
        start_step: int = 0,
    ) -> None:
        self.notes: list[str] = []
        self._config = dict(config or {})
        self._last: dict[str, float] = {}
        self._tb = None
        self._wandb = None
        if tensorboard is not False:
            if tensorboard_available():
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(
                    log_dir=str(Path(log_dir) / "tensorboard"),
                    purge_step=start_step if start_step > 0 else None,
                )
            elif tensorboard:
                self.notes.append("tensorboard is enabled but not installed; skipping it")
        if wandb:
            if wandb_available():
                import wandb as wandb_module

                self._wandb = wandb_module.init(
                    project=wandb_project,
                    entity=wandb_entity,
                    name=run_name,
                    id=run_name,
                    resume="allow",
                    dir=str(log_dir),
                    config=dict(config or {}),
                )
            else:
                self.notes.append("wandb is enabled but not installed; skipping it")
        for note in self.notes:
            _log.warning(note)

    def _write_hparams(self, writer: SummaryWriter) -> None:
        from redqueen.experiments._conditions import flatten_config
        from redqueen.experiments._headline import headline_metric

        hparams = {k: v for k, v in flatten_config(self._config).items() if v is not None}
        if not hparams:
            return
        headline = headline_metric(self._last)
        final = {f"final/{k}": self._last[k] for k in (headline, "best_rating") if k in self._last}
        writer.add_hparams(hparams, final, run_name=".")

    @property
    def backends(self) -> list[str]:
        """Names of the active backends."""
        return [name for name, sink in (("tensorboard", self._tb), ("wandb", self._wandb)) if sink]

    def log(self, step: int, metrics: Mapping[str, object]) -> None:
        """Record one step's numeric metrics (non-numeric and non-finite values are skipped)."""
        scalars = _scalars(metrics)
        self._last = scalars
        if self._tb is not None:
            for key, value in scalars.items():
                self._tb.add_scalar(key, value, global_step=step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        """Flush and close every backend (safe to call twice).

        TensorBoard gets the configuration's keys as hyperparameters (its HParams tab, so the
        runs of a sweep can be filtered and sorted by them) with the last step's objective
        headline and best rating as the session's metrics (``final/<name>``, apart from the
        time series); W&B has the configuration from the start.
        """
        if self._tb is not None:
            self._write_hparams(self._tb)
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
