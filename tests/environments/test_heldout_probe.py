"""The held-out probe of the code game: an objective measure that leaves the run unchanged."""

from __future__ import annotations

import pytest

from redqueen.environments import CodeDomain, HeldOutDomain, make_domain
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config
from redqueen.verifiers import Executor

SMALL = [
    "population.teachers=1",
    "population.students=2",
    "environment.tasks_per_teacher=2",
    "environment.answers_per_task=2",
    "environment.heldout_tasks=6",
    "model.cpu_threads=1",
]


def test_the_code_domain_holds_out_the_shipped_models_unseen_programs_with_their_gold():
    domain = make_domain("code")
    assert isinstance(domain, CodeDomain) and isinstance(domain, HeldOutDomain)
    pairs = domain.heldout_tasks(5)
    assert [t for t, _ in pairs] == ["code_o"] * 5 and domain.heldout_tasks(5) == pairs
    with Executor(workers=1) as sandbox:
        gold = [(task, task.outputs[0]) for _, task in pairs]
        assert domain.check(gold, sandbox) == ["correct"] * 5  # the stored gold is right
        wrong = [(task, "'not it'") for _, task in pairs]
        assert domain.check(wrong, sandbox) == ["wrong"] * 5


def _run(every: int, steps: int) -> list[dict[str, float]]:
    env = build_environment(load_config("tiny", [*SMALL, f"environment.heldout_every={every}"]))
    try:
        return [env.step().metrics for _ in range(steps)]
    finally:
        env.close()


@pytest.mark.slow
def test_every_k_steps_the_students_and_the_base_model_answer_and_nothing_else_changes():
    probed, plain = _run(2, 2), _run(0, 2)
    assert "heldout_lift" not in probed[0] and "heldout_lift" in probed[1]
    row = probed[1]
    assert 0 <= row["heldout_solve_rate"] <= 1 and 0 <= row["base_heldout_solve_rate"] <= 1
    assert row["heldout_lift"] == pytest.approx(row["heldout_solve_rate"] - row["base_heldout_solve_rate"])
    assert row["base_heldout_solve_rate"] * 6 == pytest.approx(round(row["base_heldout_solve_rate"] * 6))
    for with_probe, without in zip(probed, plain, strict=True):  # greedy: no random draw is taken
        shared = {k for k in without if not k.startswith("seconds")}
        assert {k: with_probe[k] for k in shared} == {k: without[k] for k in shared}
