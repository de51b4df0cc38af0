"""The evolution loop: the one owner of births and deaths for every environment, and ask/tell."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from redqueen.evo._hall_of_fame import FrozenMember, HallOfFame, HallOfFameState
from redqueen.evo._individual import Individual
from redqueen.evo._lineage import Lineage
from redqueen.evo._population import Population
from redqueen.evo._replacement import ReplacementConfig, _genome_is_finite, newborn_rating
from redqueen.evo._selection_archives import (
    SelectionArchives,
    SelectionArchivesState,
)
from redqueen.evo.selection import SELECTIONS, GridArchive, select
from redqueen.fitness import NoveltyArchive, Objectives, RatingSystem
from redqueen.genomes import generator_seed


class LoopState(SelectionArchivesState):
    """What :meth:`EvolutionLoop.state_dict` returns: the numpy and torch RNG states, the
    selection archives and the hall of fame."""

    rng: Mapping[str, object]
    torch_rng: torch.Tensor
    hall: HallOfFameState


class MemberListener(Protocol):
    """What an environment implements to follow births and deaths (e.g. an adapter host that
    must load a newborn's adapter and drop a dead member's)."""

    def member_born(self, ind: Individual) -> None:
        """``ind`` has joined the population (a founder or a child)."""

    def member_died(self, ind: Individual) -> None:
        """``ind`` has left the population."""


class EvolutionLoop:
    """The one owner of births and deaths: founding, replacement, lineage, snapshots.

    Every environment founds its members through :meth:`found` and calls :meth:`replace` every
    ``replace_every`` steps (PopuLoRA): per role, rank the members, cull the bottom fraction
    (members whose genome is not finite first), select parents among the survivors, make
    children with a weighted mix of operators, record every birth and death in the lineage,
    keep the ratings in step (the dead lose theirs, children get one by the configured
    ``newborn`` rule), and tell the listeners (e.g. the adapter host) who was born and who
    died. :meth:`snapshot` freezes the living members into the :attr:`hall` of fame. Generic
    optimisers use :meth:`ask` / :meth:`tell` instead (mu + lambda).

    Args:
        population: The population to evolve (shared with the environment).
        lineage: Where births and deaths are recorded.
        config: Replacement settings.
        rng: ``numpy.random.Generator`` (or an int seed: any integer, taken modulo ``2**64``;
            ``None``: fresh entropy) for every selection and operator choice; a
            ``torch.Generator`` for the operators is seeded from it.
        objectives: Role -> objective names (or :class:`redqueen.fitness.Objectives`) that set
            members' fitness before ranking and selection. Roles without an entry use
            ``("rating",)`` (mu - 3 sigma) when every member is rated, else keep their fitness.
        listeners: Told of every birth and death (see :class:`MemberListener`).

    A selection scheme that declares ``Needs(archive=True)`` gets an archive kept per role
    across replacements (:attr:`selection_archives`, in the state dict): past behaviours for a
    scheme that takes an ``archive`` parameter (``novelty``; :attr:`archives`), else a
    :class:`redqueen.evo.selection.GridArchive` on the grid settings in ``selection_params``
    (``map_elites``; :attr:`grids`), which the survivors enter at each replacement and which
    draws the parents from all its elites, dead ones included; :meth:`archive_metrics` reports
    QD-score and coverage. See :class:`~redqueen.evo.SelectionArchives`.

    Raises:
        UnknownNameError: If an operator name is in neither operator registry.
        ValueError: If an operator's or the selection scheme's parameters do not fit what the
            entry declares (``operator_params.gaussian.sigmaa: unknown parameter ...``).
    """

    def __init__(
        self,
        population: Population,
        lineage: Lineage,
        config: ReplacementConfig | None = None,
        rng: np.random.Generator | int | None = None,
        *,
        objectives: Mapping[str, Sequence[str] | Objectives] | None = None,
        listeners: Sequence[MemberListener] = (),
    ) -> None:
        from redqueen.evo.operators import CROSSOVERS, MUTATIONS

        self.population, self.lineage = population, lineage
        self.config = config or ReplacementConfig()
        if rng is not None and not isinstance(rng, np.random.Generator):
            if not hasattr(rng, "__index__"):
                raise TypeError(
                    "EvolutionLoop: rng must be a numpy.random.Generator, an integer seed or None, "
                    f"got {type(rng).__name__}"
                )
            rng = generator_seed(operator.index(rng))
        self.rng = np.random.default_rng(rng)  # a Generator is used as it is
        self.torch_rng = torch.Generator().manual_seed(int(self.rng.integers(2**62)))
        self.objectives = {
            role: spec if isinstance(spec, Objectives) else Objectives(tuple(spec))
            for role, spec in (objectives or {}).items()
        }
        self.listeners: list[MemberListener] = list(listeners)
        self._kinds: dict[str, str] = {}
        for name in self.config.operators:
            if name in MUTATIONS:
                self._kinds[name] = "mutation"
            elif name in CROSSOVERS:
                self._kinds[name] = "crossover"
            else:
                CROSSOVERS[name]  # raises UnknownNameError listing the crossovers
        for name, params in self.config.operator_params.items():  # wrong parameters fail here,
            registry = MUTATIONS if self._kinds[name] == "mutation" else CROSSOVERS  # not mid-run
            try:
                registry.validate(name, {k: v for k, v in params.items() if k != "n_parents"})
            except ValueError as error:
                raise ValueError(f"operator_params.{name}.{error}") from None
        if self.config.selection in SELECTIONS:
            try:
                SELECTIONS.validate(self.config.selection, self.config.selection_params)
            except ValueError as error:
                raise ValueError(f"selection_params.{error}") from None
        self._pending: list[Individual] | None = None
        self._sizes: dict[str, int] = {}
        #: The selection scheme's archives per role (past behaviours, or a grid of elites).
        self.selection_archives = SelectionArchives(self.config.selection, self.config.selection_params)
        #: Frozen copies of past members (see :meth:`snapshot`).
        self.hall = HallOfFame(capacity=self.config.hall_of_fame)

    @property
    def archives(self) -> dict[str, NoveltyArchive]:
        """Per-role archives of past behaviours for novelty selection (when none is configured)."""
        return self.selection_archives.archives

    @property
    def grids(self) -> dict[str, GridArchive]:
        """Per-role MAP-Elites archives, kept across replacements (``map_elites`` selection)."""
        return self.selection_archives.grids

    # -- births and deaths -----------------------------------------------------------------
    def found(self, ind: Individual, ratings: RatingSystem | None = None, step: int = 0) -> Individual:
        """Admit a founder: population, lineage, a fresh rating (when ``ratings`` is given), listeners."""
        self._admit(ind, step, ratings, None)
        return ind

    def replace(self, step: int, ratings: RatingSystem | None = None) -> tuple[list[Individual], list[str]]:
        """Cull and refill every role once; returns ``(births, deaths)``.

        Args:
            step: Current step (stamped on births and deaths).
            ratings: Ratings to read members' (mu, sigma) from; the dead lose theirs and
                children get one by the ``newborn`` rule.

        Raises:
            RuntimeError: If every member of a role has a non-finite genome (no parent is left).
        """
        self.sync_ratings(ratings)
        births: list[Individual] = []
        deaths: list[str] = []
        cfg = self.config
        for role in self.population.roles:
            members = self.population.members(role)
            if cfg.cull_fraction <= 0 or not members:
                continue
            culled, survivors = self._cull(role, members, step)
            if not culled:
                continue
            children = self._breed(role, survivors, len(culled), step)
            for dead in culled:
                self._dismiss(dead, step, ratings)
                deaths.append(dead.id)
            survivor_ratings = [m.rating for m in survivors if m.rating is not None]
            # Parents may be archived elites no longer alive (map_elites): they lend no rating.
            rating_of = {m.id: m.rating for m in members if m.rating is not None}
            for child in children:
                parents = [rating_of[p] for p in child.parents if p in rating_of]
                self._admit(child, step, ratings, (parents, survivor_ratings))
                births.append(child)
        return births, deaths

    def _cull(
        self, role: str, members: list[Individual], step: int
    ) -> tuple[list[Individual], list[Individual]]:
        """Who of ``members`` dies this round, and the survivors best first.

        Members with a non-finite genome die first; then the worst-ranked of the rest, up to
        ``cull_fraction`` of the role, sparing the ``elitism`` best and those within ``grace``
        steps of their birth, and always leaving at least one member.

        Raises:
            RuntimeError: If every member has a non-finite genome.
        """
        cfg = self.config
        broken = [m for m in members if not _genome_is_finite(m.genome)]
        if len(broken) == len(members):
            raise RuntimeError(f"EvolutionLoop.replace: every {role} has a non-finite genome")
        broken_ids = {m.id for m in broken}
        healthy = [m for m in members if m.id not in broken_ids]
        n = len(members)
        n_cull = min(max(1, round(cfg.cull_fraction * n)), n - max(1, cfg.elitism))
        ranked = [healthy[i] for i in self.rank(role, healthy)] if healthy else []
        protected = {m.id for m in ranked[: cfg.elitism]}
        protected.update(m.id for m in ranked if step - m.birth < cfg.grace)
        cullable = [m for m in reversed(ranked) if m.id not in protected]  # worst first
        culled = broken + cullable[: max(0, n_cull - len(broken))]
        gone = {m.id for m in culled}
        return culled, [m for m in ranked if m.id not in gone]

    def snapshot(self, step: int) -> list[FrozenMember]:
        """Freeze every living member into :attr:`hall` as of ``step`` (steps completed)."""
        return self.hall.snapshot(step, self.population.living)

    def rank(self, role: str, members: Sequence[Individual]) -> list[int]:
        """Indices of ``members`` best first, by the configured ranking scheme."""
        self.assign_fitness(role, members)
        order = select(self.config.ranking, members, len(members), rng=self.rng)
        seen: dict[int, None] = dict.fromkeys(order)
        return list(seen) + [i for i in range(len(members)) if i not in seen]

    def assign_fitness(self, role: str, members: Sequence[Individual]) -> None:
        """Set members' fitness from the role's objectives (or their rating; see the class doc)."""
        if role in self.objectives:
            self.objectives[role].assign(members)
        elif members and all(m.rating is not None for m in members):
            Objectives(("rating",)).assign(members)

    def sync_ratings(self, ratings: RatingSystem | None) -> None:
        """Copy (mu, sigma) from ``ratings`` onto the living members that have one."""
        if ratings is None:
            return
        for ind in self.population.living:
            if ind.id in ratings:
                ind.rating = ratings.get(ind.id)

    # -- ask / tell ------------------------------------------------------------------------
    def ask(self, step: int, *, n: int | Mapping[str, int] | None = None) -> list[Individual]:
        """Propose children for evaluation (births are recorded now; members are not yet added).

        Args:
            step: Current step (the children's birth).
            n: Children per role: an int for every role, a mapping, or ``None`` for as many
                as each role has members.

        Raises:
            RuntimeError: If the previous ``ask`` was not answered by :meth:`tell`.
        """
        if self._pending is not None:
            raise RuntimeError("EvolutionLoop.ask called twice; call tell() with the evaluated children first")
        children: list[Individual] = []
        self._sizes = {}
        for role in self.population.roles:
            members = self.population.members(role)
            count = len(members) if n is None else (n if isinstance(n, int) else n.get(role, 0))
            if not members or count <= 0:
                continue
            self._sizes[role] = len(members)
            ranked = [members[i] for i in self.rank(role, members)]
            for child in self._breed(role, ranked, count, step):
                self.lineage.record_birth(child, step)
                children.append(child)
        self._pending = children
        return children

    def tell(self, step: int, children: Sequence[Individual] | None = None) -> tuple[list[Individual], list[str]]:
        """Insert evaluated children and cut each role back to its size (mu + lambda survival).

        Children need a valid fitness (or rating, or the role's objectives). Returns
        ``(births, deaths)``; a child that does not survive is recorded as dying at ``step``.

        Raises:
            RuntimeError: If :meth:`ask` was not called first.
        """
        if self._pending is None:
            raise RuntimeError("EvolutionLoop.tell called before ask()")
        children = list(self._pending if children is None else children)
        self._pending = None
        for child in children:
            self.population.add(child)
            for listener in self.listeners:
                listener.member_born(child)
        deaths: list[str] = []
        for role, size in self._sizes.items():
            members = self.population.members(role)
            ranked = [members[i] for i in self.rank(role, members)]
            for dead in ranked[size:]:
                self._dismiss(dead, step, None)
                deaths.append(dead.id)
        return [c for c in children if c.alive], deaths

    # -- internals -------------------------------------------------------------------------
    def _breed(self, role: str, parents: Sequence[Individual], count: int, step: int) -> list[Individual]:
        """``count`` children of ``parents`` (ranked best first) by the operator mix."""
        from redqueen.evo.operators import CROSSOVERS, MUTATIONS, crossover, mutate

        names = sorted(self.config.operators)  # a mapping's key order must not change the run
        weights = np.asarray([self.config.operators[n] for n in names], dtype=float)
        ops = [names[i] for i in self.rng.choice(len(names), size=count, p=weights / weights.sum())]
        arity = [self._arity(op) for op in ops]
        if parents:
            self.assign_fitness(role, parents)
        pool, drawn = self.selection_archives.draw(role, parents, sum(arity), self.rng)
        rank = {id(m): i for i, m in enumerate(pool)}  # pool members are distinct objects, best first
        children, offset = [], 0
        for op, a in zip(ops, arity, strict=True):
            group = sorted(drawn[offset : offset + a], key=lambda m: rank[id(m)])  # best first
            offset += a
            params = {k: v for k, v in self.config.operator_params.get(op, {}).items() if k != "n_parents"}
            if self._kinds[op] == "mutation":
                genome = mutate(op, group[0].genome, rng=self.torch_rng, **params)
                used = MUTATIONS.effective_params(op, params)  # lineage records defaults too
            else:
                genome = crossover(op, [p.genome for p in group], rng=self.torch_rng, **params)
                used = CROSSOVERS.effective_params(op, params)
            children.append(
                Individual(
                    self.population.new_id(role), role, genome, group[0].fitness.weights,
                    parents=[p.id for p in group], operator=op, operator_params=used, birth=step,
                )
            )
        return children

    def archive_metrics(self) -> dict[str, Any]:
        """``qd_score/<role>``, ``coverage/<role>`` and the cells ``archive/<role>`` of every
        MAP-Elites archive (see :meth:`SelectionArchives.metrics`, typed :data:`ArchiveMetrics`;
        ``Any`` here because environments merge it into metrics rows typed as numbers)."""
        return self.selection_archives.metrics()

    def _arity(self, op: str) -> int:
        if self._kinds[op] == "mutation":
            return 1
        return max(1, int(self.config.operator_params.get(op, {}).get("n_parents", 2)))

    def _admit(
        self,
        ind: Individual,
        step: int,
        ratings: RatingSystem | None,
        heritage: tuple[list[tuple[float, float]], list[tuple[float, float]]] | None,
    ) -> None:
        """Add ``ind`` with its lineage record and first rating; ``heritage`` is a child's
        (parents' ratings, survivors' ratings), ``None`` for a founder."""
        self.population.add(ind)
        self.lineage.record_birth(ind, step)
        if ratings is not None:
            initial = (ratings.mu, ratings.sigma)
            if heritage is None:
                ind.rating = ratings.add(ind.id)
            else:
                rating = newborn_rating(self.config.newborn, heritage[0], heritage[1], initial, self.rng)
                ind.rating = ratings.set(ind.id, rating)
        for listener in self.listeners:
            listener.member_born(ind)

    def _dismiss(self, ind: Individual, step: int, ratings: RatingSystem | None) -> None:
        self.population.kill(ind.id, step)
        self.lineage.record_death(ind.id, step, ind)
        if ratings is not None:
            ratings.remove(ind.id)
        for listener in self.listeners:
            listener.member_died(ind)

    # -- checkpoints -----------------------------------------------------------------------
    def state_dict(self) -> LoopState:
        """RNG states (numpy and torch), the selection archives and the hall of fame (plain data)."""
        archives = self.selection_archives.state_dict()
        return LoopState(
            rng=self.rng.bit_generator.state,
            torch_rng=self.torch_rng.get_state(),
            archives=archives["archives"],
            hall=self.hall.state_dict(),
            grids=archives["grids"],
        )

    def load_state_dict(self, state: LoopState) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.rng.bit_generator.state = state["rng"]
        self.torch_rng.set_state(state["torch_rng"])
        self.selection_archives.load_state_dict(state)
        if "hall" in state:
            self.hall.load_state_dict(state["hall"])
