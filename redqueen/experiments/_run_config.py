"""A run directory's ``config.yaml``, read as the data it is.

``config.yaml`` is the fully resolved configuration the run was started with, and whoever
handed the directory over could have edited it. So ``resume`` and ``ciao`` read it under three
rules, beside the configuration's own checks:

* It is read through :meth:`~redqueen.experiments.rundir.RunDirectory.read_config`: never
  through a symbolic link, at most 1 MiB, its aliases counted before they are expanded.
* It names no other file. A ``base:`` key (how a hand-written configuration starts from a
  preset or another file) is refused: a resolved configuration has none, and following one
  would read whatever file it names, anywhere.
* Settings that make the run talk to other machines (:func:`remote_settings`: a Ray cluster
  to join, whose replies are unpickled in this process; a W&B project that receives the
  configuration and metrics) are used only when the caller confirms them (``--trust-remote``),
  as the plug-ins of ``plugins.json`` are. Otherwise the command stops naming them.
"""

from __future__ import annotations

from redqueen.experiments.config import ConfigError, ExperimentConfig, validate_config
from redqueen.experiments.rundir import RunDirectory

__all__ = ["load_run_config", "remote_settings"]


def remote_settings(config: ExperimentConfig) -> list[str]:
    """The settings of ``config`` that reach other machines, each described in a few words."""
    found = []
    if config.engine.ray_address is not None:
        found.append(
            f"engine.ray_address {config.engine.ray_address!r} (a Ray cluster to join, whose "
            "replies this process unpickles)"
        )
    if config.logging.wandb:
        entity = config.logging.wandb_entity
        owner = f", entity {entity!r}" if entity is not None else ""
        found.append(
            f"logging.wandb (the configuration and metrics go to W&B project "
            f"{config.logging.wandb_project!r}{owner})"
        )
    return found


def load_run_config(run_dir: RunDirectory, *, trust_remote: bool = False) -> ExperimentConfig:
    """The validated configuration of ``run_dir``, under the rules of this module.

    Args:
        run_dir: The run directory.
        trust_remote: Use the settings that reach other machines (the ``--trust-remote`` flag).

    Raises:
        RunDirectoryError: If ``config.yaml`` is missing, a link, or not a YAML mapping.
        UnsafePathError: If the directory holds a symbolic link or special file.
        ConfigError: One line naming ``config.yaml``: a ``base:`` key, a field that does not
            validate, or unconfirmed settings that reach other machines.
    """
    data = run_dir.read_config()
    label = str(run_dir.config_path)
    if "base" in data:
        raise ConfigError(
            f"{label}: base: a run directory's configuration is fully resolved and names no "
            "other file; refused"
        )
    config = validate_config(data, label=label)
    found = remote_settings(config)
    if found and not trust_remote:
        raise ConfigError(
            f"{label} sets what reaches other machines: {'; '.join(found)}; pass --trust-remote "
            "to use them"
        )
    return config
