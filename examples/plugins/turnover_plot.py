"""A plot plug-in: births and deaths per step, read from the run's lineage.csv."""

from __future__ import annotations

from collections import Counter

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from redqueen.experiments.plots import PLOTS, RunData, SkipPlot


@PLOTS.register("turnover")
def turnover(data: RunData) -> Figure:
    """Members born and members culled at each step (founders left out)."""
    births = Counter(
        int(row["origin_time"]) for row in data.lineage if row["ancestor_list"] != "[none]"
    )
    deaths = Counter(
        int(row["destruction_time"]) for row in data.lineage if row["destruction_time"]
    )
    if not births and not deaths:
        raise SkipPlot("lineage.csv records no birth or death after the founders")
    steps = sorted(set(births) | set(deaths))
    figure, ax = plt.subplots(figsize=(6, 3))
    ax.bar([s - 0.2 for s in steps], [births[s] for s in steps], width=0.4, label="born")
    ax.bar([s + 0.2 for s in steps], [deaths[s] for s in steps], width=0.4, label="culled")
    ax.set(xlabel="step", ylabel="members", title="population turnover")
    ax.legend()
    return figure
