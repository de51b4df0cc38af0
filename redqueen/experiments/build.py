"""Turn a validated :class:`~redqueen.experiments.config.ExperimentConfig` into an environment.

Every environment, built-in or plug-in, is built the same way: its class is looked up in
:data:`redqueen.environments.ENVIRONMENTS` and constructed with the arguments its constructor
declares (:mod:`redqueen.experiments._wiring`: each settings object it takes gets its
configuration section whole, ``options`` its validated ``environment.options``).

:func:`plan_environment` checks the configuration (once) and resolves the arguments without
building anything; :meth:`EnvironmentPlan.build` builds. :func:`build_environment` does both.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from redqueen._registry import UnknownNameError
from redqueen.environments.base import Environment
from redqueen.experiments._config_checks import check_config, environment_class
from redqueen.experiments._wiring import arguments, inputs
from redqueen.experiments.config import ConfigError, ExperimentConfig
from redqueen.settings import PopulationSettings, ReplacementConfig

__all__ = ["EnvironmentPlan", "build_environment", "plan_environment"]

#: A refusal that names its configuration key: ``"population.solo: ..."``.
_KEYED = re.compile(
    r"^(seed|steps|model|population|environment|evolution|matchmaking|objectives|learner|sampling|engine|logging)(\.[\w.]+)?(\s+and\s+[\w.]+)?: "
)


@dataclass(frozen=True)
class EnvironmentPlan:
    """A checked configuration, its environment class and the constructor's arguments."""

    cfg: ExperimentConfig
    cls: type[Environment]
    kwargs: dict[str, object]

    def build(self) -> Environment:
        """Construct the environment (``model.cpu_threads`` is applied first, process-wide).

        Raises:
            ConfigError: One line naming the key the environment refused, the model that does
                not load, or the environment that cannot be built.
        """
        try:
            with _held_logs():  # a build that fails says one line, not the notes that led to it
                _apply_threads(self.cfg)
                return self.cls(**self.kwargs)
        except UnknownNameError as error:
            raise ConfigError(f"evolution: {error}") from None
        except KeyError as error:  # an objective no member reports
            raise ConfigError(f"objectives: {error.args[0] if error.args else error}") from None
        except OSError as error:
            raise ConfigError(f"model.name: {error.args[0] if error.args else error}") from None
        except (TypeError, ValueError) as error:
            message = " ".join(str(error.args[0] if error.args else error).split())
            if _KEYED.match(message):
                raise ConfigError(message) from None
            name = self.cfg.environment.name
            raise ConfigError(f"environment: cannot build {name!r}: {message}") from None


@contextmanager
def _held_logs() -> Iterator[None]:
    """Hold the ``redqueen`` logger's records; pass them on only if the block succeeds."""
    logger = logging.getLogger("redqueen")
    held: list[logging.LogRecord] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    saved = logger.handlers[:], logger.propagate
    logger.handlers, logger.propagate = [_Hold()], False
    try:
        yield
    finally:
        logger.handlers, logger.propagate = saved
    for record in held:  # reached only when the block succeeded
        logger.handle(record)


def plan_environment(cfg: ExperimentConfig) -> EnvironmentPlan:
    """Check ``cfg`` against the registries and its environment, and resolve the environment's
    constructor arguments; nothing is built, nothing loaded.

    Raises:
        ConfigError: One line naming the first offending key.
    """
    _check_device(cfg)
    check_config(cfg)
    _check_backend(cfg)
    cls = environment_class(cfg)
    kwargs = arguments(cls, cfg)
    _check_settings(cls, kwargs)
    return EnvironmentPlan(cfg, cls, kwargs)


def _check_settings(cls: type[Environment], kwargs: dict[str, object]) -> None:
    """The environment's own refusals (:meth:`Environment.check_settings`: a role without
    members, ...) with the sections it will be given, before any model loads."""
    sections = [kwargs[item.name] for item in inputs(cls) if item.kind == "section"]
    population = next((s for s in sections if isinstance(s, PopulationSettings)), None)
    replacement = next((s for s in sections if isinstance(s, ReplacementConfig)), None)
    if population is None:
        return
    try:
        cls.check_settings(population, replacement)
    except ValueError as error:
        raise ConfigError(" ".join(str(error).split())) from None


def build_environment(cfg: ExperimentConfig) -> Environment:
    """Construct the environment a configuration describes.

    Args:
        cfg: A validated configuration (see :func:`redqueen.experiments.config.load_config`).

    Returns:
        A ready :class:`redqueen.environments.Environment` at step 0.

    Raises:
        ConfigError: If the environment name is unknown, or a setting does not fit it
            (one line naming the field).
    """
    return plan_environment(cfg).build()


def device_problem(name: str, *, local: bool = True) -> str | None:
    """Why ``name`` is not a torch device this process can use, or None when it is.

    ``local=False`` checks only the spelling (remote workers check their own devices).
    """
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as error:
        return f"{name!r} is not a torch device ({str(error).splitlines()[0]})"
    if not local or device.type == "cpu":
        return None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return f"{name!r}, but torch {torch.__version__} sees no CUDA device"
        if device.index is not None and device.index >= torch.cuda.device_count():
            return f"{name!r}, but torch sees {torch.cuda.device_count()} CUDA device(s)"
        return None
    backend = getattr(torch, device.type, None)
    available = getattr(backend, "is_available", None)
    if callable(available) and not available():
        return f"{name!r}, but this torch has no {device.type} device available"
    return None


def _check_backend(cfg: ExperimentConfig) -> None:
    """``model.backend`` is ``auto`` or a registered generation backend (before any model loads)."""
    name = cfg.model.backend
    if name == "auto":
        return
    from redqueen.engine.backends import BACKENDS

    if name not in BACKENDS:
        known = ", ".join(["auto", *sorted(BACKENDS)])
        raise ConfigError(f"model.backend: unknown backend {name!r} (known: {known})")


def _check_device(cfg: ExperimentConfig) -> None:
    """``model.device`` names a device this process has (Ray workers check their own)."""
    problem = device_problem(cfg.model.device, local=cfg.engine.workers < 1)
    if problem is not None:
        raise ConfigError(f"model.device: {problem}")


def _apply_threads(cfg: ExperimentConfig) -> None:
    """``model.cpu_threads`` for CPU runs (torch's intra-op threads, process-wide)."""
    if cfg.model.cpu_threads is None or cfg.model.device.startswith("cuda"):
        return
    import torch

    from redqueen.experiments._cpu import resolve_cpu_threads

    threads = resolve_cpu_threads(cfg.model.cpu_threads)
    if threads is not None:
        torch.set_num_threads(threads)
