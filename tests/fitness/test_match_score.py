"""One rule for who won a match, in every environment that records matches."""

from __future__ import annotations

from collections import defaultdict

import pytest

from redqueen.environments._game_stats import match_outcomes
from redqueen.environments._round import PlayedTask
from redqueen.environments.games import GamesEnv
from redqueen.environments.games._options import GamesOptions
from redqueen.environments.surrogate import SurrogateEnv, SurrogateOptions
from redqueen.fitness import INVALID_TASK_POLICIES, match_score


def test_the_rule_and_its_policies() -> None:
    one_valid_unsolved = [0.0] + [None] * 7
    assert match_score(one_valid_unsolved) == 0.875  # the teacher forfeits invalid tasks
    assert match_score(one_valid_unsolved, invalid="skip") == 0.0
    assert match_score([0.5, 1.0]) == match_score([0.5, 1.0], invalid="skip") == 0.75
    for policy in INVALID_TASK_POLICIES:
        assert match_score([None, None], invalid=policy) == 1.0  # nothing valid: student wins
    with pytest.raises(ValueError, match="forfeit, skip"):
        match_score([0.5], invalid="ignore")
    with pytest.raises(ValueError, match="at least one task"):
        match_score([])


def _recorded(env) -> tuple[list[tuple[str, str, float]], list[dict]]:
    """One step of ``env``: the matches it recorded and its task rows."""
    recorded: list[tuple[str, str, float]] = []
    record = env.league.record_score

    def spy(teacher: str, student: str, score: float) -> None:
        recorded.append((teacher, student, score))
        record(teacher, student, score)

    env.league.record_score = spy
    return recorded, env.step().tasks


@pytest.mark.parametrize(
    "make",
    [
        lambda: GamesEnv(
            population=GamesEnv.default_population.updated(teachers=3, students=3),
            options=GamesOptions(game="ladder", domain=0.4),
            seed=2,
        ),
        lambda: SurrogateEnv(
            population=SurrogateEnv.default_population.updated(teachers=3, students=3),
            options=SurrogateOptions(domain=0.8),
            seed=1,
        ),
    ],
    ids=["games", "surrogate"],
)
def test_environments_record_the_rule(make) -> None:
    recorded, rows = _recorded(make())
    by_match: dict[tuple[str, str], list[float | None]] = defaultdict(list)
    for row in rows:
        by_match[(row["teacher"], row["student"])].append(row["solve_rate"])
    assert any(None in rates for rates in by_match.values())  # invalid tasks were played
    assert any(any(r is not None for r in rates) for rates in by_match.values())
    assert recorded and all(
        score == pytest.approx(match_score(by_match[(t, s)])) for t, s, score in recorded
    )


def test_the_code_game_scores_matches_by_the_rule() -> None:
    played = [PlayedTask("t", "s", "code_o", None, task=object(), solve_rate=0.0)]
    played += [PlayedTask("t", "s", "code_o", None) for _ in range(7)]  # invalid proposals
    ((teacher, student, rates),) = match_outcomes(played, [("t", "s")])
    assert (teacher, student, match_score(rates)) == ("t", "s", 0.875)
