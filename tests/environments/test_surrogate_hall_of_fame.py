"""The surrogate environment with a hall of fame: frozen past members as opponents, resume."""

from __future__ import annotations

import io

import torch

from redqueen.environments.surrogate import SurrogateEnv
from redqueen.evo import ReplacementConfig
from redqueen.settings import MatchmakingSettings

SMALL = dict(
    population=SurrogateEnv.default_population.updated(teachers=3, students=3, rank=2, alpha=4.0),
    match=SurrogateEnv.default_match.updated(tasks_per_teacher=4, answers_per_task=3),
    replacement=ReplacementConfig(
        replace_every=2, snapshot_every=1, hall_of_fame=2, operators={"gaussian": 1.0}
    ),
)


def _env() -> SurrogateEnv:
    return SurrogateEnv(seed=5, matchmaking=MatchmakingSettings(hall_of_fame_share=0.5), **SMALL)


def _hall(env: SurrogateEnv) -> dict:
    hall = env.evolution.hall
    return {m.key: m for m in hall.members("teacher") + hall.members("student")}


def _weights(genome) -> list[torch.Tensor]:
    return [t.clone() for _, (a, b) in genome.items() for t in (a, b)]


def test_past_members_play_frozen_and_unrated():
    env = _env()
    first = env.step()
    assert all("@" not in row["teacher"] + row["student"] for row in first.tasks)  # no past yet
    assert env.evolution.hall.steps == [1]
    met, seen = set(), {}
    for _ in range(3):
        before = {key: _weights(m.genome) for key, m in _hall(env).items()}
        seen.update(before)
        record = env.step()
        met |= {
            name for row in record.tasks for name in (row["teacher"], row["student"]) if "@" in name
        }
        assert all(
            "@" not in row["id"] for row in record.ratings
        )  # frozen members carry no rating row
        for key, m in _hall(env).items():
            if key in before:  # a frozen member that may have just played: never trained
                assert all(
                    torch.equal(x, y) for x, y in zip(before[key], _weights(m.genome), strict=True)
                )
    assert met and met <= set(seen)
    assert env.evolution.hall.steps == [3, 4]  # the newest two snapshots


def test_resumes_bit_for_bit_with_the_hall_of_fame():
    a = _env()
    for _ in range(3):
        a.step()
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    b = _env()
    b.load_state_dict(torch.load(buffer, weights_only=True))
    for _ in range(2):
        ra, rb = a.step(), b.step()
        assert ra.tasks == rb.tasks and ra.ratings == rb.ratings and ra.births == rb.births
