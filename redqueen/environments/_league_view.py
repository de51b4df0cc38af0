"""Read-only views of an environment's :class:`~redqueen.evo.League`.

Environments own one ``league``; users, tests, benchmarks and the runner read the familiar
names (``env.population``, ``env.evolution.hall``, ...) through these properties, so the league
stays the one owner and nothing is kept twice.
"""

from __future__ import annotations

from redqueen.evo import EvolutionLoop, FrozenMember, League, Lineage, Population, ReplacementConfig
from redqueen.fitness import PFSPMatchmaker, RatingSystem


class LeagueView:
    """The league's members, lineage, ratings and loop under the environment's own names."""

    #: The one owner of members, matches, replacement and the hall of fame.
    league: League

    @property
    def population(self) -> Population:
        """The living (and dead) members."""
        return self.league.population

    @property
    def lineage(self) -> Lineage:
        """Every birth and death."""
        return self.league.lineage

    @property
    def ratings(self) -> RatingSystem:
        """The living members' ratings."""
        return self.league.ratings

    @property
    def evolution(self) -> EvolutionLoop:
        """The evolution loop (replacement, hall of fame, archives)."""
        return self.league.evolution

    @property
    def matchmaker(self) -> PFSPMatchmaker:
        """PFSP matchmaking."""
        return self.league.matchmaker

    @property
    def replacement(self) -> ReplacementConfig:
        """Replacement, newborn and snapshot settings."""
        return self.league.replacement

    def snapshots(self) -> dict[int, list[FrozenMember]]:
        """The hall of fame's kept snapshots (step -> frozen members), for the run directory."""
        return self.league.snapshots()
