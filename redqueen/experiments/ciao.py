"""``redqueen ciao RUN_DIR``: Current Individual vs Ancestral Opponents.

Subjective fitness (ratings, rewards) only says how members do against today's opponents, so it
cannot tell an arms race from a cycle. Cliff & Miller ("Tracking the Red Queen", ECAL 1995)
play each generation's members against every earlier generation's opponents; the "master
tournament" of Floreano & Nolfi (1997) plays every generation against every other. This module
does the latter on the snapshots a run keeps (``snapshots/step_<n>/``): cell ``(i, j)`` is the
mean score of the solvers frozen at snapshot ``j`` against the proposers frozen at snapshot
``i`` (teachers vs students; in the self-play baseline, solo agents in both seats). With steady
progress, scores rise along each row (later solvers are better) and fall down each column
(later proposers are harder); a cycle shows as bands that return, and disengagement as a
matrix stuck at 0 or 1.

Writes ``ciao.json`` and ``plots/ciao.png`` into the run directory. ``redqueen plot`` (and the
end of a run) draws the same matrix with the other plots where playing the matches is cheap
(the surrogate environments), and from ``ciao.json`` otherwise. Register with
``app.command("ciao")(ciao_command)``.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import typer

from redqueen.experiments._display import error_line, shown
from redqueen.experiments._safe_paths import check_links, write_in
from redqueen.experiments.snapshots import SnapshotMember, read_snapshots

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Most matches per cell: every match of the matrix is planned before the first is played.
MAX_PAIRS = 10_000

#: Seat of each role in a CIAO match: (proposer roles, solver roles) per kind of run.
_SEATS = ((("teacher",), ("student",)), (("solo",), ("solo",)))


@dataclass(frozen=True)
class CiaoResult:
    """The CIAO matrix of one run.

    Attributes:
        steps: Snapshot steps, oldest first (rows and columns in this order).
        proposer_role: Role in the proposing seat (rows).
        solver_role: Role in the solving seat (columns).
        solver_score: ``solver_score[i][j]``: mean score in [0, 1] of the solvers of snapshot
            ``j`` against the proposers of snapshot ``i`` (the proposers' score is 1 minus it).
        pairs_per_cell: Matches played per cell.
        seed: Seed of the matches.
    """

    steps: list[int]
    proposer_role: str
    solver_role: str
    solver_score: list[list[float]]
    pairs_per_cell: int
    seed: int


def _seats(snapshots: dict[int, list[SnapshotMember]]) -> tuple[str, str]:
    roles = {m.role for members in snapshots.values() for m in members}
    for proposers, solvers in _SEATS:
        if set(proposers) | set(solvers) <= roles:
            return proposers[0], solvers[0]
    raise ValueError(
        f"snapshots: roles {sorted(roles)} have no proposer and solver seats (teacher/student or solo)"
    )


def ciao_matrix(
    run_path: str | Path, *, pairs: int | None = None, seed: int = 0, trust_remote: bool = False
) -> CiaoResult:
    """Play every snapshot's proposers against every snapshot's solvers.

    Args:
        run_path: A run directory with ``snapshots/``.
        pairs: Matches per cell (default: as many as the larger of the two groups; proposer
            ``k`` meets solver ``k``, each group cycled).
        seed: Seeds the matches; the same seed gives the same matrix.
        trust_remote: Use the settings of ``config.yaml`` that reach other machines (a Ray
            cluster to join); without it they are refused.

    Raises:
        ValueError: Naming the file or field: not a run directory, no snapshots, unreadable
            adapters, a configuration that no longer validates or builds; or ``pairs`` outside
            1 .. :data:`MAX_PAIRS`.
        TypeError: If ``pairs`` or ``seed`` is not an integer.
    """
    from redqueen.environments.base import MatchPlayer
    from redqueen.experiments._run_config import load_run_config
    from redqueen.experiments.build import build_environment
    from redqueen.experiments.rundir import RunDirectory

    for name, value in (("pairs", pairs), ("seed", seed)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"ciao_matrix: {name} must be an integer, got {type(value).__name__}")
    if pairs is not None and not 1 <= pairs <= MAX_PAIRS:  # -1 played no match: a NaN matrix
        raise ValueError(f"ciao_matrix: pairs must be from 1 to {MAX_PAIRS}, got {pairs}")
    run_dir = RunDirectory(run_path)
    config = load_run_config(run_dir, trust_remote=trust_remote)  # walks the directory first
    snapshots = read_snapshots(run_dir.path)
    if not snapshots:
        raise ValueError(
            f"{run_dir.path / 'snapshots'}: no snapshots (the run needs evolution.snapshot_every > 0 "
            "and at least that many steps)"
        )
    proposer_role, solver_role = _seats(snapshots)
    steps = sorted(snapshots)
    cache: dict[tuple[int, str], Any] = {}

    def genomes(step: int, role: str) -> list[Any]:
        members = [m for m in snapshots[step] if m.role == role]
        for m in members:
            if (step, m.id) not in cache:
                cache[(step, m.id)] = m.genome()
        return [cache[(step, m.id)] for m in members]

    matches: list[tuple[Any, Any]] = []
    cells: list[tuple[int, int, int]] = []  # (row, column, matches)
    for i, row_step in enumerate(steps):
        proposers = genomes(row_step, proposer_role)
        for j, column_step in enumerate(steps):
            solvers = genomes(column_step, solver_role)
            if not proposers or not solvers:
                raise ValueError(
                    f"snapshots/step_{row_step:05d} or step_{column_step:05d}: a seat is empty"
                )
            n = pairs or max(len(proposers), len(solvers))
            matches.extend(
                (proposers[k % len(proposers)], solvers[k % len(solvers)]) for k in range(n)
            )
            cells.append((i, j, n))
    env = build_environment(config)
    try:
        if not isinstance(env, MatchPlayer):
            raise ValueError(
                f"environment.name: {type(env).__name__} cannot play matches outside a run"
            )
        scores = env.play_matches(matches, seed=seed)
    finally:
        env.close()
    matrix = np.zeros((len(steps), len(steps)))
    offset = 0
    for i, j, n in cells:
        matrix[i, j] = float(np.mean(scores[offset : offset + n]))
        offset += n
    return CiaoResult(
        steps, proposer_role, solver_role, matrix.tolist(), int(pairs or cells[0][2]), int(seed)
    )


def ciao_figure(result: CiaoResult) -> Figure:
    """The CIAO matrix as a heatmap (solver score per cell), drawn without pyplot."""
    from matplotlib.figure import Figure

    matrix = np.asarray(result.solver_score)
    size = 2.0 + 0.6 * len(result.steps)
    fig = Figure(figsize=(size + 1.5, size))
    ax = fig.subplots()
    image = ax.imshow(matrix, vmin=0.0, vmax=1.0, cmap="viridis", origin="upper")
    labels = [str(s) for s in result.steps]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel(f"{result.solver_role}s frozen at step")
    ax.set_ylabel(f"{result.proposer_role}s frozen at step")
    if len(labels) <= 12:
        for (i, j), value in np.ndenumerate(matrix):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="w" if value < 0.6 else "k", fontsize=8)
    fig.colorbar(image, ax=ax, label=f"{result.solver_role} score (1 - {result.proposer_role} score)")
    ax.set_title("CIAO: every generation against every other")
    fig.tight_layout()
    return fig


def write_ciao(run_path: str | Path, result: CiaoResult) -> tuple[Path, Path]:
    """Write ``ciao.json`` and ``plots/ciao.png``; returns both paths.

    Both are written from the run directory's handle down, never through a symbolic link.

    Raises:
        UnsafePathError: If ``plots``, ``ciao.json`` or ``plots/ciao.png`` is a link.
    """
    run_path = Path(run_path)
    check_links(run_path, "ciao.json", "plots/ciao.png")  # both refused before either is written
    json_path = write_in(
        run_path,
        "ciao.json",
        json.dumps(
            {**asdict(result), "rows": "proposer snapshot", "columns": "solver snapshot"}, indent=1
        ).encode(),
    )
    png = io.BytesIO()
    ciao_figure(result).savefig(png, format="png", dpi=120)
    plot_path = write_in(run_path, "plots/ciao.png", png.getvalue())
    return json_path, plot_path


def _fail(message: str) -> typer.Exit:
    print(error_line(message), file=sys.stderr)
    return typer.Exit(2)


def ciao_command(
    run_dir: Path = typer.Argument(
        ..., help="Run directory with snapshots/ (evolution.snapshot_every > 0)."
    ),
    pairs: int | None = typer.Option(
        None, "--pairs", min=1, max=MAX_PAIRS, help="Matches per cell (default: one per member)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the matches."),
    trust_remote: bool = typer.Option(
        False,
        "--trust-remote",
        help="Use config.yaml's settings that reach other machines (engine.ray_address).",
    ),
) -> None:
    """CIAO matrix: members saved at snapshots against each other's generations; writes ciao.json and plots/ciao.png."""
    from rich.console import Console
    from rich.markup import escape

    try:
        status = f"CIAO: playing {escape(shown(run_dir))}'s snapshots against each other"
        with Console(stderr=True).status(status):
            result = ciao_matrix(run_dir, pairs=pairs, seed=seed, trust_remote=trust_remote)
        paths = write_ciao(run_dir, result)
    except (ValueError, KeyError, OSError) as error:
        text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
        raise _fail(text.splitlines()[0] if text else type(error).__name__) from None
    for path in paths:
        print(shown(path))
