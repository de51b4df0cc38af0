"""Each pathology detector, end to end: a games configuration that must fire it, one that must not.

The unit tests of :mod:`redqueen.environments.games.detectors` feed constructed numbers; these
run the games environment from its presets (as ``redqueen run`` does) and read the detector the
run logged at its last step, averaged over three seeds. The firing configurations are the
regimes of ``benchmarks/SURROGATE_GAMES.md`` (amendment 1) where each pathology arises; the
quiet ones are where it does not. A detector that stopped seeing its pathology, or started
seeing it everywhere, fails here.

Cycling cannot fire in the game presets' own design (six members per role in two dimensions):
there even snapshots that share nothing cycle in 0.03 of their triads at spread/noise 10 and in
0.10 at the noise-free rule (``benchmarks/results/cycling_ceiling.json``), because the CIAO cell
averages 36 pairings. Its firing configuration is therefore a smaller, wider design (two members
per role, six dimensions, members spread hundreds of noise widths apart by exploring variation),
where random snapshots cycle in 0.15 of their triads; its quiet side is the same configuration
on ``compare_on_one``, whose rule is transitive. Both are decided before they are played (the
members move by variation, not learning), so this controls the instrument, not the claim that
co-evolution chases its tail.
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

# Two members per role in six dimensions, spread far beyond the noise by exploring variation.
SMALL_WIDE = (
    "population.teachers=2",
    "population.students=2",
    "evolution.cull_fraction=0.5",
    "environment.options.dims=6",
    "population.init_std=1.0",
    "environment.options.exploration=0.1",
    "evolution.operators.svd_merge=0",
    "evolution.operators.gaussian=1.0",
    "evolution.operator_params.gaussian.sigma=0.3",
    "evolution.operator_params.gaussian.fraction=1.0",
)

CONTROLS = {
    # detector: ((preset, overrides) that must fire it, (preset, overrides) that must not)
    "cycling": (("game-intransitive", SMALL_WIDE), ("game-compare-on-one", SMALL_WIDE)),
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
