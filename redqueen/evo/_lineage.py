"""Lineage: every birth and death, exported as an ALife phylogeny CSV and as a networkx graph."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import networkx as nx

from redqueen.evo._individual import Individual
from redqueen.fitness import conservative_rating

_BASE_COLUMNS = ("id", "ancestor_list", "origin_time", "destruction_time", "name", "role", "operator", "operator_params")


@dataclass(frozen=True)
class LineageRecord:
    """One member's line in the phylogeny.

    Attributes:
        uid: Integer id used by the ALife standard (birth order).
        name: The member id, e.g. ``"student-0007"``.
        role: The member's role.
        parents: Parent member ids.
        operator: Variation operator (``None`` for founders).
        operator_params: Operator parameters (JSON-serialisable).
        origin_time: Birth step.
        destruction_time: Death step, ``None`` while alive.
        fitness: Final (or latest) fitness columns, e.g. ``{"rating_lcb": 2.0}``.
    """

    uid: int
    name: str
    role: str
    parents: tuple[str, ...]
    operator: str | None
    operator_params: dict[str, Any]
    origin_time: int
    destruction_time: int | None = None
    fitness: dict[str, float] = field(default_factory=dict)


def fitness_columns(ind: Individual) -> dict[str, float]:
    """The fitness columns lineage keeps for a member: objectives, rating, fitness values."""
    columns = {f"objective_{k}": float(v) for k, v in ind.objectives.items()}
    if ind.rating is not None:
        mu, sigma = ind.rating
        columns.update(rating_mu=float(mu), rating_sigma=float(sigma), rating_lcb=conservative_rating(mu, sigma))
    if ind.fitness.valid:
        columns.update({f"fitness_{i}": float(v) for i, v in enumerate(ind.fitness.values)})
    return columns


class Lineage:
    """The phylogeny of a run: births (with parents, operator and step) and deaths.

    Births are recorded the moment they happen, so a crash never loses ancestry. The CSV
    follows the ALife data standard for phylogenies (``id``, ``ancestor_list``,
    ``origin_time``, ``destruction_time``) with the member id in ``name`` and extra columns
    for role, operator, its JSON parameters and final fitness values.
    """

    def __init__(self) -> None:
        self._records: dict[str, LineageRecord] = {}

    # -- recording -------------------------------------------------------------------------
    def record_birth(self, ind: Individual, step: int) -> LineageRecord:
        """Record a birth now; parents must already be recorded.

        Raises:
            ValueError: If the id is already recorded or a parent is unknown.
        """
        if ind.id in self._records:
            raise ValueError(f"Lineage already has a birth for {ind.id!r}")
        missing = [p for p in ind.parents if p not in self._records]
        if missing:
            raise ValueError(f"Lineage: parents {missing} of {ind.id!r} were never recorded")
        record = LineageRecord(
            uid=len(self._records),
            name=ind.id,
            role=ind.role,
            parents=tuple(ind.parents),
            operator=ind.operator,
            operator_params=_jsonable(ind.operator_params),
            origin_time=int(step),
            fitness=fitness_columns(ind),
        )
        self._records[ind.id] = record
        return record

    def record_death(self, id: str, step: int, ind: Individual | None = None) -> None:  # noqa: A002
        """Record a death; pass the dead member to keep its final fitness columns.

        Raises:
            KeyError: If the id was never born.
        """
        record = self[id]
        fitness = fitness_columns(ind) if ind is not None else record.fitness
        self._records[id] = replace(record, destruction_time=int(step), fitness=fitness)

    def update_fitness(self, individuals: Iterable[Individual]) -> None:
        """Refresh the fitness columns of (living) members, e.g. before export."""
        for ind in individuals:
            if ind.id in self._records:
                self._records[ind.id] = replace(self._records[ind.id], fitness=fitness_columns(ind))

    # -- queries ---------------------------------------------------------------------------
    def __getitem__(self, id: str) -> LineageRecord:  # noqa: A002
        try:
            return self._records[id]
        except KeyError:
            raise KeyError(f"Lineage has no member {id!r}") from None

    def __contains__(self, id: object) -> bool:
        return id in self._records

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> list[LineageRecord]:
        """Every record, in birth order."""
        return list(self._records.values())

    def living(self) -> list[str]:
        """Ids of members without a recorded death."""
        return [r.name for r in self._records.values() if r.destruction_time is None]

    def ancestors(self, id: str) -> set[str]:  # noqa: A002
        """Every ancestor id of a member (not including itself)."""
        seen: set[str] = set()
        stack = list(self[id].parents)
        while stack:
            parent = stack.pop()
            if parent not in seen:
                seen.add(parent)
                stack.extend(self._records[parent].parents)
        return seen

    # -- export / import -------------------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Write the ALife phylogeny CSV; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fit_cols = sorted({k for r in self._records.values() for k in r.fitness})
        uid = {name: r.uid for name, r in self._records.items()}
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow([*_BASE_COLUMNS, *fit_cols])
            for r in self._records.values():
                ancestors = _ancestor_list(uid[p] for p in r.parents)
                writer.writerow(
                    [
                        r.uid,
                        ancestors,
                        r.origin_time,
                        "" if r.destruction_time is None else r.destruction_time,
                        r.name,
                        r.role,
                        r.operator or "",
                        json.dumps(r.operator_params, sort_keys=True),
                        *[_fmt(r.fitness.get(c)) for c in fit_cols],
                    ]
                )
        return path

    @classmethod
    def from_csv(cls, path: str | Path) -> Lineage:
        """Read a CSV written by :meth:`to_csv` (or any ALife phylogeny with integer ids).

        Raises:
            ValueError: If a required column is missing or an ancestor id is unknown.
        """
        path = Path(path)
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        required = {"id", "ancestor_list", "origin_time"}
        if rows and not required <= set(rows[0]):
            raise ValueError(f"{path}: missing columns {sorted(required - set(rows[0]))}")
        names = {row["id"]: (row.get("name") or row["id"]) for row in rows}
        lineage = cls()
        for row in rows:
            parents = []
            for token in row["ancestor_list"].strip().strip("[]").split(","):
                token = token.strip()
                if token and token.lower() != "none":
                    if token not in names:
                        raise ValueError(f"{path}: ancestor {token} of id {row['id']} is not in the file")
                    parents.append(names[token])
            extra = {k: v for k, v in row.items() if k not in _BASE_COLUMNS and v not in ("", None)}
            destruction = row.get("destruction_time") or ""
            lineage._records[names[row["id"]]] = LineageRecord(
                uid=int(row["id"]),
                name=names[row["id"]],
                role=row.get("role") or "",
                parents=tuple(parents),
                operator=row.get("operator") or None,
                operator_params=json.loads(row.get("operator_params") or "{}"),
                origin_time=int(float(row["origin_time"])),
                destruction_time=None if destruction in ("", "inf", "none") else int(float(destruction)),
                fitness={k: float(v) for k, v in extra.items()},
            )
        return lineage

    def to_networkx(self) -> nx.DiGraph:
        """A directed graph parent -> child; node attributes are the record fields."""
        graph = nx.DiGraph()
        for r in self._records.values():
            graph.add_node(
                r.name, uid=r.uid, role=r.role, operator=r.operator, origin_time=r.origin_time,
                destruction_time=r.destruction_time, **r.fitness,
            )
            for parent in r.parents:
                graph.add_edge(parent, r.name, length=r.origin_time - self._records[parent].origin_time)
        return graph

    # -- phylogenetic diversity ------------------------------------------------------------
    def phylogenetic_diversity(self, ids: Iterable[str] | None = None, *, branch_length: str = "edges") -> float:
        """Faith's phylogenetic diversity: total branch length of the subgraph ancestral to ``ids``.

        Faith, "Conservation evaluation and phylogenetic diversity", Biol. Conserv. 1992. With
        crossover the phylogeny is a DAG; every ancestral edge counts once.

        Args:
            ids: Taxa to measure (default: the living members).
            branch_length: ``"edges"`` (each parent-child edge counts 1) or ``"time"``
                (birth-step difference).
        """
        ids = list(self.living() if ids is None else ids)
        edges: set[tuple[str, str]] = set()
        for name in ids:
            stack = [name]
            seen = set()
            while stack:
                child = stack.pop()
                if child in seen:
                    continue
                seen.add(child)
                for parent in self[child].parents:
                    edges.add((parent, child))
                    stack.append(parent)
        return float(sum(self._length(p, c, branch_length) for p, c in edges))

    def mean_pairwise_distance(self, ids: Iterable[str] | None = None, *, branch_length: str = "edges") -> float:
        """Mean tree distance between pairs of ``ids`` (default: the living members).

        Distances are shortest paths through the undirected phylogeny; founders are joined by a
        virtual common ancestor one edge (or one step) above them, so the forest is connected.
        Returns 0.0 for fewer than two taxa.
        """
        ids = list(self.living() if ids is None else ids)
        if len(ids) < 2:
            return 0.0
        graph = nx.Graph()
        for r in self._records.values():
            graph.add_node(r.name)
            if not r.parents:
                graph.add_edge("__root__", r.name, weight=1.0)
            for parent in r.parents:
                graph.add_edge(parent, r.name, weight=self._length(parent, r.name, branch_length))
        total = 0.0
        for i, a in enumerate(ids[:-1]):
            lengths = nx.single_source_dijkstra_path_length(graph, a, weight="weight")
            total += sum(lengths[b] for b in ids[i + 1 :])
        return total / (len(ids) * (len(ids) - 1) / 2)

    def _length(self, parent: str, child: str, branch_length: str) -> float:
        if branch_length == "edges":
            return 1.0
        if branch_length == "time":
            return float(self._records[child].origin_time - self._records[parent].origin_time)
        raise ValueError(f"branch_length must be 'edges' or 'time', got {branch_length!r}")

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Every record as plain data; ``torch.save``-able."""
        return {"records": [r.__dict__.copy() for r in self._records.values()]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self._records = {}
        for row in state["records"]:
            row = dict(row)
            row["parents"] = tuple(row["parents"])
            self._records[row["name"]] = LineageRecord(**row)


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as JSON-serialisable plain data (tuples become lists, others repr)."""
    return json.loads(json.dumps(dict(params), default=repr))


def _ancestor_list(uids: Iterable[int]) -> str:
    """The ALife ``ancestor_list`` cell: ``[3,5]`` with no spaces (the converters reject
    whitespace), each parent once (a self-crossover has one ancestor), ``[none]`` for roots."""
    unique = list(dict.fromkeys(uids))
    return "[" + ",".join(str(u) for u in unique) + "]" if unique else "[none]"


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return repr(float(value)) if math.isfinite(value) else str(value)
