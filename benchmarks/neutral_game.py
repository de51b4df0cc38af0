"""Who the replacement culls: by age in a neutral game, by skill and age in a hidden-skill game.

Eight teachers and eight students are paired by PFSP (:func:`redqueen.evo.cull_study`); every
two steps the evolution loop culls a quarter of each role by ``mu - 3 sigma``.

- **Neutral game** (``skill_sd = 0``): every match is a fair coin flip, so no member is better
  than another and a fair rule culls members of every age equally often (25%). Per
  ``evolution.newborn`` rule: the cull rate per age in replacement rounds (1: born at the
  previous replacement; 3: three or more) and a chi-square test of independence of age and
  culling.
- **Hidden-skill game** (``--skill-sd``, default 1): every member gets a skill at birth,
  independent of its parents and its age; the student wins with probability
  ``sigmoid(skill_student - skill_teacher)``. Per rule: the cull rate per skill quartile (within
  role), per age, and per age within the lower and the upper half of skill, so that newborns
  and veterans of the same skill can be compared.

Run: ``python benchmarks/neutral_game.py [--rounds 300] [--seeds 2] [--skill-sd 1.0]`` (about
20 s per rule, seed and game on one core); writes ``benchmarks/results/neutral_game.json`` and
``benchmarks/results/skill_game.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import chi2_contingency

from redqueen.evo import NEWBORN_RULES, CullRecord, cull_study

RESULTS = Path(__file__).resolve().parent / "results"


def _rate(rows: list[CullRecord]) -> dict[str, float]:
    return {"cull_rate": sum(r.culled for r in rows) / max(1, len(rows)), "seen": len(rows)}


def by_age(records: list[CullRecord]) -> dict[str, dict[str, float]]:
    """Cull rate and count per age (1, 2, 3 meaning 3 or more)."""
    return {str(a): _rate([r for r in records if r.age == a]) for a in sorted({r.age for r in records})}


def quartile(records: list[CullRecord]) -> list[int]:
    """Each record's skill quartile (0: lowest) within its role."""
    out = []
    cuts = {
        role: np.quantile([r.skill for r in records if r.role == role], [0.25, 0.5, 0.75])
        for role in {r.role for r in records}
    }
    for r in records:
        out.append(int(np.searchsorted(cuts[r.role], r.skill, side="right")))
    return out


def age_p_value(records: list[CullRecord]) -> float:
    """Chi-square p-value of independence of age and culling."""
    ages = sorted({r.age for r in records})
    table = [[sum(r.culled for r in records if r.age == a), sum(not r.culled for r in records if r.age == a)]
             for a in ages]
    return float(chi2_contingency(table)[1]) if len(table) > 1 else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--skill-sd", type=float, default=1.0)
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    neutral: dict[str, object] = {"seeds": seeds, "rounds": args.rounds, "burn_in": 20, "rules": {}}
    skill: dict[str, object] = {"seeds": seeds, "rounds": args.rounds, "burn_in": 20,
                                "skill_sd": args.skill_sd, "rules": {}}
    for rule in NEWBORN_RULES:
        records = [r for s in seeds for r in cull_study(rule, seed=s, rounds=args.rounds)]
        ages = by_age(records)
        neutral["rules"][rule] = {  # type: ignore[index]
            "cull_rate_by_age": {a: v["cull_rate"] for a, v in ages.items()},
            "members_seen_by_age": {a: v["seen"] for a, v in ages.items()},
            "p_value_age_independent": age_p_value(records),
        }
        records = [r for s in seeds for r in cull_study(rule, seed=s, rounds=args.rounds, skill_sd=args.skill_sd)]
        q = quartile(records)
        upper = [qi >= 2 for qi in q]
        skill["rules"][rule] = {  # type: ignore[index]
            "cull_rate_by_skill_quartile": [_rate([r for r, qi in zip(records, q, strict=True) if qi == k])
                                            for k in range(4)],
            "cull_rate_by_age": by_age(records),
            "cull_rate_by_age_lower_half_of_skill": by_age([r for r, u in zip(records, upper, strict=True) if not u]),
            "cull_rate_by_age_upper_half_of_skill": by_age([r for r, u in zip(records, upper, strict=True) if u]),
            "mean_skill_by_age": {a: float(np.mean([r.skill for r in records if r.age == int(a)]))
                                  for a in by_age(records)},
        }
        print(rule, json.dumps(skill["rules"][rule]["cull_rate_by_skill_quartile"]))  # type: ignore[index]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "neutral_game.json").write_text(json.dumps(neutral, indent=2))
    (RESULTS / "skill_game.json").write_text(json.dumps(skill, indent=2))


if __name__ == "__main__":
    main()
