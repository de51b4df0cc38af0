"""Each pathology detector, end to end: a games configuration that must fire it, one that must not.

The unit tests of :mod:`redqueen.environments.games.detectors` feed constructed numbers; these
run the games environment from its presets (as ``redqueen run`` does) and read the detector the
run logged at its last step, averaged over three seeds. The firing configurations are the
regimes of ``benchmarks/SURROGATE_GAMES.md`` (amendment 1) where each pathology arises; the
quiet ones are where it does not. A detector that stopped seeing its pathology, or started
seeing it everywhere, fails here.

Cycling has no end-to-end firing configuration: in the regime where it arises (R2 below) the
share of cyclic triads averaged over three seeds is about 0.08, under the detector's threshold
of 0.1 (``benchmarks/results/surrogate_games_round2.json`` has 40 seeds). Its quiet side is
checked here; its firing side only on constructed matrices (``test_game_detectors.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from redqueen.environments.games.detectors import fires
from redqueen.experiments.build import build_environment
from redqueen.experiments.config import load_config

SEEDS, STEPS = (0, 1, 2), 60
COMMON = ("evolution.snapshot_every=5", "evolution.hall_of_fame=12", "checkpoint_every=0")
R1 = ("population.init_std=0.1", "environment.options.exploration=0.5")  # spread << noise
R2 = ("population.init_std=0.3", "environment.options.exploration=0.1")  # spread ~ noise
WIDE = ("population.init_std=1.0", "environment.options.exploration=0.1")  # spread >> noise

CONTROLS = {
    # detector: ((preset, overrides) that must fire it, (preset, overrides) that must not)
    "disengagement": (("game-intransitive", WIDE), ("game-intransitive", R1)),
    "collapse": (
        ("game-ladder", ("environment.options.coupling=1.0",)),
        ("game-ladder", ("environment.options.coupling=0.0",)),
    ),
    "focusing": (
        ("game-focusing", ("population.init_std=1.0", "environment.options.exploration=0.5")),
        ("game-focusing", R1),
    ),
}


def _last(detector: str, preset: str, overrides: tuple[str, ...]) -> float:
    """The detector's value at the last step (disengagement: the mean of the last 10), mean over seeds."""
    values = []
    for seed in SEEDS:
        cfg = load_config(preset, [*COMMON, *overrides, f"steps={STEPS}", f"seed={seed}"])
        env = build_environment(cfg)
        series = [env.step().metrics[detector] for _ in range(STEPS)]
        env.close()
        values.append(np.mean(series[-10:]) if detector == "disengagement" else series[-1])
    return float(np.mean(values))


def test_cycling_stays_quiet_where_spread_is_far_below_the_noise():
    quiet = _last("cycling", "game-intransitive", R1)
    assert not fires("cycling", quiet), quiet


@pytest.mark.slow
@pytest.mark.parametrize("detector", sorted(CONTROLS))
def test_detector_fires_on_its_pathology_and_not_without_it(detector):
    (on_preset, on), (off_preset, off) = CONTROLS[detector]
    fired, quiet = _last(detector, on_preset, on), _last(detector, off_preset, off)
    assert fires(detector, fired), (detector, fired)
    assert not fires(detector, quiet), (detector, quiet)
