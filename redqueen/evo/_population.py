"""Populations: living members grouped by role, id allocation, birth, death and replacement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict

import numpy as np

from redqueen.evo._individual import Individual


class MemberState(TypedDict):
    """One member as plain data (:func:`member_state`): its genome as a state dict (or as it
    is, for a genome without one), fitness weights and values, and what lineage and selection read."""

    id: str
    role: str
    genome: object
    weights: tuple[float, ...]
    values: tuple[float, ...]
    parents: tuple[str, ...]
    operator: str | None
    operator_params: dict[str, object]
    birth: int
    objectives: dict[str, float]
    descriptor: list[float] | None
    cases: list[float] | None
    rating: tuple[float, float] | None


class PopulationState(TypedDict):
    """What :meth:`Population.state_dict` returns: roles, id counters and the living members."""

    roles: list[str]
    counters: dict[str, int]
    members: list[MemberState]


class Population:
    """The living members of a (co-)evolutionary run, as sub-populations keyed by role.

    Members are kept in insertion order, so iteration and selection are reproducible. Dead
    members leave the population (their genomes can be freed); their history lives in
    :class:`redqueen.evo.Lineage`.

    Args:
        roles: Roles known from the start (more appear as members of new roles are added).
    """

    def __init__(self, *, roles: tuple[str, ...] = ()) -> None:
        self._members: dict[str, dict[str, Individual]] = {role: {} for role in roles}
        self._counters: dict[str, int] = {role: 0 for role in roles}

    # -- queries ---------------------------------------------------------------------------
    @property
    def roles(self) -> list[str]:
        """Every role seen so far, in first-seen order."""
        return list(self._members)

    def members(self, role: str) -> list[Individual]:
        """Living members of ``role`` in insertion order.

        Raises:
            KeyError: If the role is unknown.
        """
        if role not in self._members:
            raise KeyError(f"Population has no role {role!r} (roles: {', '.join(self.roles) or 'none'})")
        return list(self._members[role].values())

    @property
    def living(self) -> list[Individual]:
        """Every living member, role by role."""
        return [ind for group in self._members.values() for ind in group.values()]

    def get(self, id: str) -> Individual:  # noqa: A002
        """The living member with this id.

        Raises:
            KeyError: If no living member has the id.
        """
        for group in self._members.values():
            if id in group:
                return group[id]
        raise KeyError(f"Population has no living member {id!r}")

    def __contains__(self, id: object) -> bool:
        return any(id in group for group in self._members.values())

    def __iter__(self) -> Iterator[Individual]:
        return iter(self.living)

    def __len__(self) -> int:
        return sum(len(group) for group in self._members.values())

    # -- changes ---------------------------------------------------------------------------
    def new_id(self, role: str) -> str:
        """Allocate the next id of ``role``, e.g. ``"teacher-0003"``; ids are never reused."""
        n = self._counters.get(role, 0)
        self._counters[role] = n + 1
        self._members.setdefault(role, {})
        return f"{role}-{n:04d}"

    def add(self, ind: Individual) -> Individual:
        """Insert a living member (a birth).

        Raises:
            ValueError: If the id is taken by a living member or the member is dead.
        """
        if ind.id in self:
            raise ValueError(f"Population already holds a member with id {ind.id!r}")
        if not ind.alive:
            raise ValueError(f"cannot add dead member {ind.id!r} to the Population")
        self._members.setdefault(ind.role, {})[ind.id] = ind
        self._counters.setdefault(ind.role, 0)
        return ind

    def kill(self, id: str, step: int) -> Individual:  # noqa: A002
        """Remove a living member, stamping its death step; returns it.

        Raises:
            KeyError: If no living member has the id.
        """
        ind = self.get(id)
        del self._members[ind.role][id]
        ind.death = int(step)
        return ind

    def replace(self, old_id: str, new: Individual, step: int) -> Individual:
        """Kill ``old_id`` and add ``new`` in one move (steady-state replacement); returns the dead."""
        dead = self.kill(old_id, step)
        self.add(new)
        return dead

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> PopulationState:
        """Living members (genomes as state dicts) and id counters; ``torch.save``-able."""
        members = [member_state(ind) for ind in self.living]
        return PopulationState(roles=self.roles, counters=dict(self._counters), members=members)

    def load_state_dict(self, state: PopulationState) -> None:
        """Restore what :meth:`state_dict` returned (genome state dicts become LoRA genomes)."""
        self._members = {role: {} for role in state["roles"]}
        self._counters = dict(state["counters"])
        for row in state["members"]:
            ind = member_from_state(row)
            self._members.setdefault(ind.role, {})[ind.id] = ind

    def __repr__(self) -> str:
        sizes = ", ".join(f"{role}={len(group)}" for role, group in self._members.items())
        return f"Population({sizes})"


def member_state(ind: Individual) -> MemberState:
    """One member as plain data (its genome as a state dict), for ``torch.save`` checkpoints."""
    genome = ind.genome
    return MemberState(
        id=ind.id,
        role=ind.role,
        genome=genome.state_dict() if hasattr(genome, "state_dict") else genome,
        weights=ind.fitness.weights,
        values=ind.fitness.values if ind.fitness.valid else (),
        parents=ind.parents,
        operator=ind.operator,
        operator_params=ind.operator_params,
        birth=ind.birth,
        objectives=dict(ind.objectives),
        descriptor=None if ind.descriptor is None else np.asarray(ind.descriptor).tolist(),
        cases=None if ind.cases is None else np.asarray(ind.cases).tolist(),
        rating=ind.rating,
    )


def member_from_state(row: MemberState) -> Individual:
    """Inverse of :func:`member_state` (a genome state dict becomes a LoRA genome)."""
    genome = row["genome"]
    if isinstance(genome, dict):
        from redqueen.genomes import LoRAGenome

        genome = LoRAGenome.from_state_dict(genome)
    ind = Individual(
        row["id"],
        row["role"],
        genome,
        row["weights"],
        parents=row["parents"],
        operator=row["operator"],
        operator_params=row["operator_params"],
        birth=row["birth"],
    )
    if row["values"]:
        ind.fitness.values = tuple(row["values"])
    ind.objectives = dict(row["objectives"])
    ind.descriptor = None if row["descriptor"] is None else np.asarray(row["descriptor"], dtype=float)
    ind.cases = None if row["cases"] is None else np.asarray(row["cases"], dtype=float)
    if row["rating"] is not None:
        mu, sigma = row["rating"]
        ind.rating = (mu, sigma)
    return ind
