"""The run directory: the files a run writes and ``resume``, ``plot`` and ``export`` read.

Layout (see DESIGN.md, "Run directory")::

    config.yaml          fully resolved configuration
    metrics.jsonl        one row per step
    tasks.jsonl          one row per proposed task
    ratings.jsonl        one row per rated member per step
    lineage.csv          ALife phylogeny standard (written by ``Lineage.to_csv``)
    population/<id>/     PEFT adapters of the living members
    checkpoints/step_<n>/  environment state and log offsets (see :mod:`.checkpoint`)
    plots/*.png
    .lock                held (``flock``) by the one process running or resuming the run
    .snapshot.lock       held shared by readers, exclusively while a checkpoint is published

The three JSON-lines logs are append-only. A checkpoint records their byte sizes, so a resumed
run cuts away whatever was written after the checkpoint it restarts from and no row appears twice.

Nothing in the directory steers where files go: member ids become folder names only after
:func:`~redqueen.experiments._safe_paths.check_member_id`, :meth:`RunDirectory.require` refuses a
directory holding a symbolic link or special file, and files are opened through
:func:`~redqueen.experiments._safe_paths.open_in` (no link followed below the run directory).
What a run directory promises is written down in ``docs/run-directory.md``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from redqueen.experiments._fsync import fsync_directory
from redqueen.experiments._run_logs import LOG_FILES, RunDirectoryError, RunLogs, jsonable
from redqueen.experiments._safe_paths import (
    UnsafePathError,
    check_links,
    check_member_id,
    check_tree,
    open_in,
    write_in,
)
from redqueen.experiments._yaml import safe_load
from redqueen.experiments.runlock import (
    SNAPSHOT_LOCK_FILE,
    RunDirectoryBusyError,
    RunLock,
    file_lock,
    writer_active,
)

__all__ = [
    "LOG_FILES",
    "RunDirectory",
    "RunDirectoryBusyError",
    "RunDirectoryError",
    "RunLock",
    "UnsafePathError",
    "export_adapter",
    "writer_active",
]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary sibling, fsync it and rename it over ``path``.

    The temporary file is opened without following a symbolic link, and a link at ``path``
    is refused rather than written through (:func:`~redqueen.experiments._safe_paths.write_in`).
    """
    write_in(path.parent, path.name, data)


def replace_directory(staging: Path, target: Path) -> None:
    """Swap a fully written ``staging`` directory in for ``target`` (which may not exist yet)."""
    old = target.with_name(f".{target.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    fsync_directory(target.parent)
    if old.exists():
        shutil.rmtree(old)


class RunDirectory(RunLogs):
    """Paths, log writers and readers of one run directory.

    Args:
        path: The run directory.
    """

    # ------------------------------------------------------------------ paths
    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    @property
    def lineage_path(self) -> Path:
        return self.path / "lineage.csv"

    @property
    def population_dir(self) -> Path:
        return self.path / "population"

    @property
    def plots_dir(self) -> Path:
        return self.path / "plots"

    @property
    def plugins_path(self) -> Path:
        return self.path / "plugins.json"

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Hold the run still for a reader: no checkpoint is published until the block ends.

        Inside the block, ``lineage.csv``, ``population/`` and the latest checkpoint belong to
        the same step, and :meth:`read_log` stops at that checkpoint's offsets while a run is
        going, so a reader sees one consistent step even while the run writes its next ones.

        Raises:
            RunDirectoryError: If the folder holds no ``config.yaml``: a reader leaves no lock
                file in a folder that is not a run.
        """
        if not self.config_path.is_file():
            raise RunDirectoryError(f"{self.config_path} is missing: not a run directory")
        with file_lock(self.path / SNAPSHOT_LOCK_FILE, fcntl.LOCK_SH):
            yield

    @contextlib.contextmanager
    def publishing(self) -> Iterator[None]:
        """Held by the writer while it replaces lineage, population and checkpoint (readers wait)."""
        with file_lock(self.path / SNAPSHOT_LOCK_FILE, fcntl.LOCK_EX):
            yield

    def require(self) -> None:
        """Check that this is a run directory: it exists, holds ``config.yaml``, and holds
        nothing but directories and regular files (no symbolic link anywhere inside).

        Raises:
            RunDirectoryError: Naming the missing directory or file.
            UnsafePathError: Naming a symbolic link or special file inside.
        """
        if not self.path.is_dir():
            what = "is a file, not a directory" if self.path.exists() else "does not exist"
            raise RunDirectoryError(f"run directory {self.path} {what}")
        check_tree(self.path)
        if not self.config_path.is_file():
            raise RunDirectoryError(f"{self.config_path} is missing: not a run directory")

    def check_links(self, *names: str) -> None:
        """Refuse before writing if ``names`` (relative paths) pass through a symbolic link.

        Raises:
            UnsafePathError: Naming the link.
        """
        check_links(self.path, *names)

    # ----------------------------------------------------------------- config
    def write_config(self, data: Mapping[str, Any]) -> None:
        """Write the fully resolved configuration as ``config.yaml``."""
        text = yaml.safe_dump(jsonable(data), sort_keys=False)
        write_atomic(self.config_path, text.encode())

    def read_config(self) -> dict[str, Any]:
        """The ``config.yaml`` mapping.

        Raises:
            RunDirectoryError: If the file is missing or is not a YAML mapping.
        """
        self.require()
        try:
            data = safe_load(self._read(self.config_path.name).decode("utf-8"))
        except UnicodeDecodeError as error:
            raise RunDirectoryError(
                f"{self.config_path}: not UTF-8 text (byte {error.start})"
            ) from None
        except yaml.YAMLError as error:
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise RunDirectoryError(f"{self.config_path}: not valid YAML ({first})") from None
        if not isinstance(data, dict):
            raise RunDirectoryError(f"{self.config_path}: expected a mapping")
        return data

    def write_plugins(self, plugins: Iterable[str]) -> None:
        """Record the plug-in modules or files a run imported, so ``resume`` imports them too."""
        write_atomic(self.plugins_path, json.dumps(list(plugins)).encode())

    def read_plugins(self) -> list[str]:
        """The plug-ins recorded by :meth:`write_plugins` (none if the file is absent).

        Raises:
            RunDirectoryError: If ``plugins.json`` is not a JSON list of strings.
        """
        try:
            data = self._read(self.plugins_path.name)
        except FileNotFoundError:
            return []
        try:
            plugins = json.loads(data.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            plugins = None
        if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
            raise RunDirectoryError(f"{self.plugins_path}: expected a JSON list of module names")
        return plugins

    # ------------------------------------------------- lineage and population
    def write_lineage(self, lineage: Any) -> None:
        """Write ``lineage.csv`` through ``lineage.to_csv`` atomically."""
        tmp = self.path / ".lineage.csv.tmp"
        try:
            os.close(open_in(self.path, tmp.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
            lineage.to_csv(tmp)
            fd = open_in(self.path, tmp.name, os.O_RDWR)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.lineage_path)
        except OSError as error:
            raise RunDirectoryError(
                f"{self.lineage_path}: cannot write ({error.strerror or error})"
            ) from None
        fsync_directory(self.path)

    def write_population(
        self, members: Iterable[tuple[str, Any]], base_model: str | None
    ) -> list[str]:
        """Replace ``population/`` with one PEFT adapter folder per ``(id, genome)``.

        Args:
            members: Living members' ids and :class:`~redqueen.genomes.LoRAGenome` s;
                members without a genome are skipped.
            base_model: Written into each ``adapter_config.json`` (over the genome's own
                ``base_model``), so that ``PeftModel.from_pretrained`` finds the base model as
                it stands, e.g. the installed absolute path of tiny-coder.

        Returns:
            The ids written.

        Raises:
            UnsafePathError: If a member id is not a plain name (checked before anything is
                written), or ``population/`` or its staging folders are symbolic links.
        """
        members = [(check_member_id(i, "population"), g) for i, g in members if g is not None]
        self.check_links("population", ".population.tmp", ".population.old")
        staging = self.path / ".population.tmp"
        written = []
        try:
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir()
            for member_id, genome in members:
                target = staging / member_id
                genome.save_peft(
                    target, base_model=base_model or getattr(genome, "base_model", None)
                )
                written.append(member_id)
            replace_directory(staging, self.population_dir)
        except OSError as error:
            raise RunDirectoryError(
                f"{self.population_dir}: cannot write ({error.strerror or error})"
            ) from None
        return written

    def population_ids(self) -> list[str]:
        """Ids of the members whose adapters are in ``population/``.

        Raises:
            UnsafePathError: If a folder there is not named as a member id is
                (:func:`~redqueen.experiments._safe_paths.check_member_id`).
        """
        if not self.population_dir.is_dir():
            return []
        return sorted(
            check_member_id(p.name, str(self.population_dir))
            for p in self.population_dir.iterdir()
            if p.is_dir()
        )


def export_adapter(
    run_path: str | os.PathLike[str], member_id: str, out: str | os.PathLike[str]
) -> Path:
    """Copy a living member's adapter out of a run directory as a standalone PEFT folder.

    The adapter is read and written back through :class:`~redqueen.genomes.LoRAGenome`, so a
    corrupt file is caught here rather than when someone loads the export. The shipped
    ``tiny-coder`` is named by its absolute path in the redqueen installed where the export is
    made (a run directory copied from another machine names that machine's path), so the
    export loads from any working directory; other base models keep the hub id or path the
    run used. A surrogate run has no base model PEFT can load, so its members are refused.

    Args:
        run_path: The run directory.
        member_id: Id of a member in ``population/``.
        out: Folder to create; it must not exist or be empty.

    Returns:
        The written folder.

    Raises:
        RunDirectoryError: If the run directory, the member or a readable adapter is missing,
            or ``out`` is in the way (one line naming it).
    """
    from redqueen.genomes import LoRAGenome

    run_dir = RunDirectory(run_path)
    run_dir.require()
    config = run_dir.read_config()
    if (config.get("environment") or {}).get("name") == "surrogate":
        raise RunDirectoryError(
            f"{run_dir.config_path}: a surrogate run's adapters sit on the surrogate's small MLP, "
            "which PEFT cannot load (environment.name: surrogate); read population/<id>/ with LoRAGenome.from_peft"
        )
    known = run_dir.population_ids()
    if member_id not in known or check_member_id(member_id) != member_id:
        listed = ", ".join(known) or "none"
        raise RunDirectoryError(
            f"unknown member {member_id!r} in {run_dir.population_dir} (living: {listed})"
        )
    source = run_dir.population_dir / member_id
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise RunDirectoryError(f"export target {target} already exists and is not empty")
    base_model = None
    config_file = source / "adapter_config.json"
    try:
        with run_dir.snapshot():  # no checkpoint replaces population/ while the adapter is read
            base_model = json.loads(config_file.read_text()).get("base_model_name_or_path")
            genome = LoRAGenome.from_peft(source)
        name = (config.get("model") or {}).get("name")
        from redqueen.assets import shipped_model_path, shipped_models

        if name in shipped_models():
            base_model = str(shipped_model_path(name))
    except Exception as error:  # a damaged folder can fail in json, safetensors or peft
        detail = (str(error).splitlines() or [type(error).__name__])[0]
        raise RunDirectoryError(
            f"{source}: corrupt adapter ({type(error).__name__}: {detail})"
        ) from None
    if not genome.is_finite():
        raise RunDirectoryError(
            f"{source}: the adapter has non-finite factors (nan or inf); not exported"
        )
    staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        genome.save_peft(staging, base_model=base_model)
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException as error:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(error, OSError):  # its own message named the hidden staging folder
            raise RunDirectoryError(
                f"export target {target}: cannot write ({error.strerror or error})"
            ) from None
        raise
    return target
