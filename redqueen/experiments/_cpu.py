"""How many torch threads a CPU run gets: as many as there are cores that other processes leave free.

On a small shared machine the thread count decides the speed: the `tiny` demo's step takes
about 8 s with two threads on two quiet cores, and 10 to 15 times longer with two threads when
another process keeps one of the cores busy (the threads wait for each other on tiny products),
where one thread takes about 12 s. ``model.cpu_threads: auto`` therefore measures, just before
the model loads, how busy the cores this process may run on are, and takes one thread per core
left free (at least one). When other processes keep every core busy, one line says so: steps
will be slower than on a quiet machine whatever the thread count.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

_log = logging.getLogger(__name__)

#: How long the cores are watched before the choice (seconds).
SAMPLE_SECONDS = 0.3
#: Below this many free cores the machine counts as oversubscribed.
BUSY_BELOW = 0.5


@dataclass(frozen=True)
class CpuLoad:
    """What other processes leave of the cores this process may run on.

    Attributes:
        cores: Cores this process may run on (its affinity mask).
        busy: Cores' worth of time other processes used while sampled (0 .. ``cores``).
        load1: The one-minute load average (runnable processes), or ``None`` where unknown.
    """

    cores: int
    busy: float
    load1: float | None

    @property
    def free(self) -> float:
        """Cores' worth of time left free."""
        return max(0.0, self.cores - self.busy)


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _cpu_times(cpus: set[int]) -> tuple[float, float] | None:
    """(busy, total) jiffies summed over ``cpus`` from ``/proc/stat``, or ``None`` off Linux."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    busy = total = 0.0
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
            continue
        values = [float(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
        total += sum(values)
        busy += sum(values) - values[3] - values[4]
    return (busy, total) if total else None


def measure_load(seconds: float = SAMPLE_SECONDS) -> CpuLoad:
    """How busy this process's cores are, watched for ``seconds`` while this process sleeps.

    Off Linux (no ``/proc/stat``) the one-minute load average stands in for the busy cores.
    """
    try:
        cpus = set(os.sched_getaffinity(0))
    except AttributeError:
        cpus = set(range(os.cpu_count() or 1))
    cores = len(cpus)
    try:
        load1: float | None = os.getloadavg()[0]
    except (AttributeError, OSError):
        load1 = None
    first = _cpu_times(cpus)
    if first is not None:
        time.sleep(seconds)
        second = _cpu_times(cpus)
        if second is not None and second[1] > first[1]:
            share = (second[0] - first[0]) / (second[1] - first[1])
            return CpuLoad(cores, min(float(cores), share * cores), load1)
    return CpuLoad(cores, min(float(cores), load1 or 0.0), load1)


def choose_threads(load: CpuLoad) -> int:
    """One thread per core left free (rounded to the nearest), at least one."""
    return max(1, min(load.cores, round(load.free)))


def busy_warning(load: CpuLoad) -> str | None:
    """One line when other processes leave less than half a core free, else ``None``."""
    if load.free >= BUSY_BELOW:
        return None
    average = f" (load {load.load1:.1f})" if load.load1 is not None else ""
    return f"machine busy: others use {load.busy:.1f} of {load.cores} cores{average}; steps run slower"


def resolve_cpu_threads(setting: int | str | None) -> int | None:
    """The thread count for ``model.cpu_threads``: ``"auto"`` measured here (with a line on
    what was chosen, and a warning when the machine is oversubscribed), a number as given,
    ``None`` for torch's default."""
    if setting != "auto":
        return None if setting is None else int(setting)
    load = measure_load()
    threads = choose_threads(load)
    _log.info("torch threads: %d (%.1f of %d cores free)", threads, load.free, load.cores)
    warning = busy_warning(load)
    if warning:
        _log.warning(warning)
    return threads
