"""The hall of fame: frozen copies of past members.

Co-evolution can forget: a population may lose a skill once no living opponent tests it, or
cycle through strategies that beat each other in turn. Keeping frozen members of past
generations and letting today's members meet them is the classic remedy (Rosin & Belew, "New
methods for competitive coevolution", Evol. Comput. 1997), and playing every generation's
members against every other generation's is how cycling is seen (Cliff & Miller's CIAO plots,
1995). :class:`HallOfFame` holds those snapshots as plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from redqueen.evo._individual import Individual


@dataclass(frozen=True)
class FrozenMember:
    """A member as it was at a snapshot.

    Attributes:
        key: Unique name of the frozen copy, ``"<id>@<step>"`` (the member may still live).
        id: The member's id.
        role: Its role.
        step: Steps completed when the snapshot was taken.
        genome: Its genome then (a :class:`redqueen.genomes.LoRAGenome`; never trained further).
        rating: Its ``(mu, sigma)`` then, or ``None`` when unrated.
    """

    key: str
    id: str
    role: str
    step: int
    genome: Any
    rating: tuple[float, float] | None


class FrozenMemberState(TypedDict):
    """One frozen member as plain data: its genome as a state dict (or as it is)."""

    id: str
    role: str
    genome: object
    rating: list[float] | None


class HallOfFameState(TypedDict):
    """What :meth:`HallOfFame.state_dict` returns: the capacity and ``(step, members)`` per snapshot."""

    capacity: int
    snapshots: list[tuple[int, list[FrozenMemberState]]]


class HallOfFame:
    """Snapshots of the living members, the newest ``capacity`` of them kept.

    Args:
        capacity: Snapshots kept (the oldest is dropped first); 0 keeps none.
    """

    def __init__(self, *, capacity: int = 4) -> None:
        if capacity < 0:
            raise ValueError(f"HallOfFame.capacity must be >= 0, got {capacity}")
        self.capacity = int(capacity)
        self._snapshots: dict[int, list[FrozenMember]] = {}

    def snapshot(self, step: int, members: Iterable[Individual]) -> list[FrozenMember]:
        """Freeze ``members`` (individuals with ``id``, ``role``, ``genome``, ``rating``) as of
        ``step``; returns the frozen copies. Genomes are immutable, so nothing is copied."""
        frozen = [
            FrozenMember(
                f"{ind.id}@{int(step)}",
                ind.id,
                ind.role,
                int(step),
                ind.genome,
                None if ind.rating is None else (float(ind.rating[0]), float(ind.rating[1])),
            )
            for ind in members
        ]
        if self.capacity > 0:
            self._snapshots[int(step)] = frozen
            for old in sorted(self._snapshots)[: -self.capacity]:
                del self._snapshots[old]
        return frozen

    @property
    def steps(self) -> list[int]:
        """Steps of the kept snapshots, oldest first."""
        return sorted(self._snapshots)

    def at(self, step: int) -> list[FrozenMember]:
        """The members frozen at ``step``.

        Raises:
            KeyError: If no kept snapshot was taken at ``step``.
        """
        if step not in self._snapshots:
            raise KeyError(f"HallOfFame has no snapshot at step {step} (kept: {self.steps})")
        return list(self._snapshots[step])

    def members(self, role: str) -> list[FrozenMember]:
        """Every kept frozen member of ``role``, oldest snapshot first."""
        return [m for step in self.steps for m in self._snapshots[step] if m.role == role]

    def get(self, key: str) -> FrozenMember:
        """The frozen member named ``key``.

        Raises:
            KeyError: If no kept snapshot holds it.
        """
        for group in self._snapshots.values():
            for member in group:
                if member.key == key:
                    return member
        raise KeyError(f"HallOfFame has no frozen member {key!r}")

    def __len__(self) -> int:
        return len(self._snapshots)

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> HallOfFameState:
        """Plain data: per snapshot, each member's id, role, rating and genome state dict."""
        return {
            "capacity": self.capacity,
            "snapshots": [
                (
                    step,
                    [
                        {
                            "id": m.id,
                            "role": m.role,
                            "genome": m.genome.state_dict()
                            if hasattr(m.genome, "state_dict")
                            else m.genome,
                            "rating": None if m.rating is None else list(m.rating),
                        }
                        for m in members
                    ],
                )
                for step, members in sorted(self._snapshots.items())
            ],
        }

    def load_state_dict(self, state: HallOfFameState) -> None:
        """Restore what :meth:`state_dict` returned."""
        from redqueen.genomes import LoRAGenome

        self.capacity = int(state["capacity"])
        self._snapshots = {}
        for step, rows in state["snapshots"]:
            self._snapshots[int(step)] = [
                FrozenMember(
                    f"{row['id']}@{int(step)}",
                    row["id"],
                    row["role"],
                    int(step),
                    LoRAGenome.from_state_dict(row["genome"])
                    if isinstance(row["genome"], Mapping)
                    else row["genome"],
                    None
                    if row["rating"] is None
                    else (float(row["rating"][0]), float(row["rating"][1])),
                )
                for row in rows
            ]
