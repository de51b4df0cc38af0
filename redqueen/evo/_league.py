"""The league: one owner of an environment's members, their matches and their replacement.

Every environment that pits members against each other (the code game, its self-play
baseline, the surrogate and the surrogate games, the cull study) keeps the same things in
step: a population, its lineage, the ratings, PFSP matchmaking with opponents from the hall of
fame, the single rule for who won a match, the replacement loop and the snapshots.
:class:`League` holds them once. Environments keep what is theirs: how a match is played, what
members learn, which statistics describe them (a :class:`MemberDescriber`) and where trained
weights live (a :class:`TrainedGenomes`, e.g. the adapter host).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict

import numpy as np

from redqueen.evo._hall_of_fame import FrozenMember, HallOfFame
from redqueen.evo._individual import Individual, descriptor_matrix
from redqueen.evo._lineage import Lineage
from redqueen.evo._loop import EvolutionLoop, LoopState, MemberListener
from redqueen.evo._population import Population, PopulationState
from redqueen.evo._replacement import ReplacementConfig
from redqueen.fitness import (
    INVALID_TASK_POLICIES,
    Objectives,
    PFSPMatchmaker,
    RatingSystem,
    behavioural_diversity,
    conservative_rating,
    genotypic_diversity,
    hypervolumes,
    match_score,
)
from redqueen.genomes import LoRAGenome

#: What an invalid task counts as in a match: ``"forfeit"`` (the teacher loses it) or ``"skip"``.
InvalidTaskPolicy = Literal["forfeit", "skip"]


class TrainedGenomes(Protocol):
    """Where members' trained weights live when training does not replace their genomes
    (the adapter host of the code game)."""

    def genomes(self, ids: Sequence[str]) -> Mapping[str, LoRAGenome]:
        """The current weights of the members ``ids``, as new genomes."""
        ...


class MemberDescriber(Protocol):
    """Writes objectives, lexicase cases and behaviour descriptors onto the living members."""

    def describe(self, league: League) -> None:
        """Describe every living member of ``league`` (before ranking and after births)."""
        ...


class LeagueState(TypedDict):
    """What :meth:`League.state_dict` returns (plain data)."""

    population: PopulationState
    lineage: dict[str, object]
    ratings: dict[str, object]
    evolution: LoopState
    hv_reference: dict[str, list[float]]


class RatingRow(TypedDict):
    """One row of ``ratings.jsonl``: a living member's rating and objectives at a step."""

    step: int
    id: str
    role: str
    mu: float | None
    sigma: float | None
    lcb: float | None
    objectives: dict[str, float]


@dataclass(frozen=True)
class StepOutcome:
    """Who was born and who died at the end of a step (member ids)."""

    births: list[str]
    deaths: list[str]


class League:
    """Population, lineage, ratings, matchmaking, replacement and hall of fame of one environment.

    The one owner of births, deaths and match results. Each step an environment asks
    :meth:`pair` for its matches, plays them, hands each result to :meth:`record` (or
    :meth:`record_score`) and closes with :meth:`finish_step`, which replaces members when due
    and takes snapshots. Births and deaths go through the :attr:`evolution` loop, which tells the
    ``listeners`` (an adapter host, per-member statistics).

    Args:
        roles: The population's roles, e.g. ``("teacher", "student")`` or ``("solo",)``.
        objectives: Role -> its objective vector (ranking and selection read it).
        pairing_rng: Draws every matchmaking choice. It belongs to the caller, who keeps its
            state in the checkpoint (it may draw from it for other things too).
        evolution_rng: Seeds the evolution loop (selection, operator choices; its state is in
            :meth:`state_dict`).
        replacement: Replacement, newborn and snapshot settings (default: the core's defaults).
        matchmaker: PFSP matchmaking with its hall-of-fame share (default: none from the hall).
        rated: Whether members carry ratings (a self-play baseline plays no matches).
        invalid_tasks: What an invalid task counts as in :meth:`record` (see
            :func:`redqueen.fitness.match_score`): ``"forfeit"``, the default of every built-in
            environment, counts it as solved, so proposing junk loses; ``"skip"`` leaves it out.
        listeners: Told of every birth and death (see :class:`MemberListener`).
        trained: Where trained weights live when training does not replace genomes; read once
            per step by :meth:`sync_genomes`.
        describer: Writes objectives, cases and descriptors onto members in :meth:`describe`.

    Raises:
        ValueError: On an unknown ``invalid_tasks`` policy, or wrong operator or selection
            parameters (from :class:`EvolutionLoop`).
    """

    def __init__(
        self,
        *,
        roles: Sequence[str],
        objectives: Mapping[str, Objectives],
        pairing_rng: np.random.Generator,
        evolution_rng: np.random.Generator,
        replacement: ReplacementConfig | None = None,
        matchmaker: PFSPMatchmaker | None = None,
        rated: bool = True,
        invalid_tasks: InvalidTaskPolicy = "forfeit",
        listeners: Sequence[MemberListener] = (),
        trained: TrainedGenomes | None = None,
        describer: MemberDescriber | None = None,
    ) -> None:
        if invalid_tasks not in INVALID_TASK_POLICIES:
            raise ValueError(
                f"League: invalid_tasks must be one of {', '.join(INVALID_TASK_POLICIES)}, "
                f"got {invalid_tasks!r}"
            )
        self.population = Population(roles=tuple(roles))
        self.lineage = Lineage()
        self.ratings = RatingSystem()
        self.replacement = replacement or ReplacementConfig()
        self.matchmaker = matchmaker or PFSPMatchmaker()
        self.objectives = dict(objectives)
        self.rated = bool(rated)
        self.invalid_tasks: InvalidTaskPolicy = invalid_tasks
        self.pairing_rng = pairing_rng
        self.trained = trained
        self.describer = describer
        #: Reference points of the hypervolumes, fixed on first use (kept in the checkpoint).
        self.hv_reference: dict[str, list[float]] = {}
        #: The evolution loop: founding, replacement, snapshots (and ask/tell).
        self.evolution = EvolutionLoop(
            self.population,
            self.lineage,
            self.replacement,
            evolution_rng,
            objectives=self.objectives,
            listeners=listeners,
        )

    @property
    def hall(self) -> HallOfFame:
        """The hall of fame of past members."""
        return self.evolution.hall

    def add_listener(self, listener: MemberListener) -> None:
        """Tell ``listener`` of every birth and death from now on."""
        self.evolution.listeners.append(listener)

    # -- members ------------------------------------------------------------------------------

    def found(self, role: str, genome: LoRAGenome) -> Individual:
        """Admit a founder of ``role``: lineage, a fresh rating when rated, listeners told;
        then every member is described again."""
        objectives = self.objectives.get(role)
        weights = objectives.weights if objectives is not None else None
        ind = Individual(self.population.new_id(role), role, genome, weights or (1.0,))
        self.evolution.found(ind, self.ratings if self.rated else None)
        self.describe()
        return ind

    def found_many(
        self, role: str, count: int, make_genome: Callable[[], LoRAGenome]
    ) -> list[Individual]:
        """Found ``count`` members of ``role``, their genomes made by ``make_genome()`` in order."""
        return [self.found(role, make_genome()) for _ in range(count)]

    def describe(self) -> None:
        """Let the describer (if any) write objectives, cases and descriptors onto members."""
        if self.describer is not None:
            self.describer.describe(self)

    def genome_of(self, key: str) -> LoRAGenome:
        """A living member's genome, or a frozen hall-of-fame member's (``"<id>@<step>"``)."""
        if key in self.population:
            genome: LoRAGenome = self.population.get(key).genome
            return genome
        frozen: LoRAGenome = self.hall.get(key).genome
        return frozen

    def rating_of(self, key: str) -> tuple[float, float]:
        """A living member's rating, a frozen member's rating then, or the initial rating."""
        if key in self.population:
            return self.ratings.get(key)
        rating = self.hall.get(key).rating
        return rating if rating is not None else (self.ratings.mu, self.ratings.sigma)

    # -- matches ------------------------------------------------------------------------------

    def pair(self) -> list[tuple[str, str]]:
        """This step's ``(teacher, student)`` matches: one per teacher by PFSP, plus the
        hall-of-fame matches the matchmaker's share asks for. In a population without teachers
        and students (self-play) every member meets itself."""
        roles = self.population.roles
        if "teacher" not in roles or "student" not in roles:
            return [(ind.id, ind.id) for role in roles for ind in self.population.members(role)]
        return self.matchmaker.pair(
            [t.id for t in self.population.members("teacher")],
            [s.id for s in self.population.members("student")],
            self.ratings,
            self.pairing_rng,
            past_teachers={m.key: m.rating for m in self.hall.members("teacher")},
            past_students={m.key: m.rating for m in self.hall.members("student")},
        )

    def frozen(self, pairs: Sequence[tuple[str, str]]) -> dict[str, FrozenMember]:
        """The hall-of-fame members that ``pairs`` name, by key, in order of appearance."""
        keys = dict.fromkeys(k for pair in pairs for k in pair if k not in self.population)
        return {key: self.hall.get(key) for key in keys}

    def record(self, teacher: str, student: str, solve_rates: Sequence[float | None]) -> float:
        """Score a match by the one rule and rate it; returns the student's score in [0, 1].

        ``solve_rates`` holds each task's solve rate, ``None`` for an invalid task, scored by
        :func:`redqueen.fitness.match_score` under :attr:`invalid_tasks`.
        """
        score = match_score(solve_rates, invalid=self.invalid_tasks)
        self.record_score(teacher, student, score)
        return score

    def record_score(self, teacher: str, student: str, score: float) -> None:
        """Rate a match the student scored ``score`` in (in [0, 1]); a frozen side never moves."""
        if not self.rated:
            return
        living_t, living_s = teacher in self.population, student in self.population
        if living_t and living_s:
            self.ratings.record_score(teacher, student, 1.0 - score, score)
        elif living_t:
            self.ratings.record_against(teacher, self.rating_of(student), 1.0 - score, score)
        elif living_s:
            self.ratings.record_against(student, self.rating_of(teacher), score, 1.0 - score)

    # -- the end of a step --------------------------------------------------------------------

    def sync_genomes(self) -> None:
        """Copy trained weights into the living members' genomes (one call; none without
        ``trained``)."""
        if self.trained is None:
            return
        living = self.population.living
        genomes = self.trained.genomes([ind.id for ind in living])
        for ind in living:
            ind.genome = genomes[ind.id]

    def finish_step(self, step: int) -> StepOutcome:
        """Close step ``step``: trained genomes synced, members described, replacement when due
        (births stamped ``step + 1``, members described again), ratings onto members, a
        snapshot when due and the lineage's fitness columns brought up to date."""
        self.sync_genomes()
        self.describe()
        births: list[str] = []
        deaths: list[str] = []
        if self.replacement.due(step):
            born, deaths = self.evolution.replace(step + 1, self.ratings if self.rated else None)
            births = [child.id for child in born]
            self.describe()
        if self.rated:
            self.evolution.sync_ratings(self.ratings)
        if self.replacement.snapshot_due(step):
            self.evolution.snapshot(step + 1)
        self.lineage.update_fitness(self.population.living)
        return StepOutcome(births, list(deaths))

    # -- reports ------------------------------------------------------------------------------

    def rating_rows(self, step: int) -> list[RatingRow]:
        """One ``ratings.jsonl`` row per living member (mu, sigma, lcb ``None`` when unrated)."""
        rows: list[RatingRow] = []
        for ind in self.population.living:
            rating = self.ratings.get(ind.id) if self.rated else None
            mu, sigma = rating if rating is not None else (None, None)
            rows.append(
                RatingRow(
                    step=step,
                    id=ind.id,
                    role=ind.role,
                    mu=mu,
                    sigma=sigma,
                    lcb=None if rating is None else conservative_rating(*rating),
                    objectives=dict(ind.objectives),
                )
            )
        return rows

    def best_rating(self) -> float | None:
        """The best conservative rating ``mu - 3 sigma`` among the living (``None`` unrated)."""
        if not self.rated:
            return None
        return max(self.ratings.lcb(ind.id) for ind in self.population.living)

    def diversity(self, roles: Sequence[str]) -> dict[str, float]:
        """Genotypic and behavioural diversity (means over ``roles``) and phylogenetic diversity."""
        geno = [genotypic_diversity([m.genome for m in self.population.members(r)]) for r in roles]
        beha = [behavioural_diversity(descriptor_matrix(self.population.members(r))) for r in roles]
        return {
            "genotypic_diversity": float(np.mean(geno)),
            "behavioural_diversity": float(np.mean(beha)),
            "phylogenetic_diversity": self.lineage.phylogenetic_diversity(),
        }

    def hypervolumes(self, roles: Sequence[str]) -> dict[str, float]:
        """``hypervolume/<role>`` of every role with two or more objectives, against a reference
        point fixed the first time (kept in :attr:`hv_reference`)."""
        members = {role: self.population.members(role) for role in roles}
        return hypervolumes(members, self.objectives, self.hv_reference)

    def snapshots(self) -> dict[int, list[FrozenMember]]:
        """The hall of fame's kept snapshots (step -> frozen members), for the run directory."""
        return {step: self.hall.at(step) for step in self.hall.steps}

    # -- checkpoints --------------------------------------------------------------------------

    def state_dict(self) -> LeagueState:
        """Population (with synced genomes), lineage, ratings, evolution loop and hypervolume
        reference points as plain data. The pairing RNG is the caller's to keep."""
        self.sync_genomes()
        return LeagueState(
            population=self.population.state_dict(),
            lineage=self.lineage.state_dict(),
            ratings=self.ratings.state_dict(),
            evolution=self.evolution.state_dict(),
            hv_reference={k: list(v) for k, v in self.hv_reference.items()},
        )

    def load_state_dict(self, state: Mapping[str, object], *, describe: bool = True) -> None:
        """Restore what :meth:`state_dict` returned (keys missing from older checkpoints keep
        their current value); then members are described again unless ``describe`` is false."""
        self.population.load_state_dict(state["population"])  # type: ignore[arg-type]
        self.lineage.load_state_dict(state["lineage"])  # type: ignore[arg-type]
        self.ratings.load_state_dict(state["ratings"])  # type: ignore[arg-type]
        if "evolution" in state:
            self.evolution.load_state_dict(state["evolution"])  # type: ignore[arg-type]
        references = state.get("hv_reference")
        if isinstance(references, Mapping):
            self.hv_reference = {str(k): list(v) for k, v in references.items()}
        if describe:
            self.describe()
