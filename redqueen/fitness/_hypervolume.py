"""Hypervolume of a population's objective vectors, comparable across steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from redqueen.fitness._objectives import Member, Objectives


def hypervolumes(
    members: Mapping[str, Sequence[Member]],
    objectives: Mapping[str, Objectives],
    references: dict[str, list[float]],
) -> dict[str, float]:
    """``hypervolume/<role>`` of every role with two or more objectives (pymoo's HV).

    Objectives are weighted (DEAP weights) and minimised as pymoo expects. The reference point
    of a role is fixed the first time it is computed and kept in ``references`` (which the
    caller checkpoints), so that values compare across steps and across a resume.

    Args:
        members: Role -> living members.
        objectives: Role -> its objective vector.
        references: Role -> reference point; filled in place for roles seen the first time.
    """
    from pymoo.indicators.hv import HV

    volumes: dict[str, float] = {}
    for role, group in members.items():
        wanted = objectives.get(role)
        if wanted is None or len(wanted.names) < 2 or not group:
            continue
        points = -np.array([wanted.vector(ind) for ind in group], dtype=float) * np.array(wanted.weights)
        if role not in references:
            references[role] = (points.max(axis=0) + 1.0).tolist()
        reference = np.array(references[role])
        volumes[f"hypervolume/{role}"] = float(HV(ref_point=reference)(np.minimum(points, reference)))
    return volumes
