"""Scale-out on Ray: the same runs on one process or on a cluster.

- :class:`RayAdapterHost`: the population's adapters spread over worker actors, each holding
  one copy of the base model (one GPU, or CPUs); adapters travel as tensors
  (``LoRAGenome.state_dict``), never as models; generation rows and learner steps run on the
  worker holding the adapter; GPU workers sit in a placement group (``PACK`` on one multi-GPU
  node, ``SPREAD`` across nodes). Its :meth:`~RayAdapterHost.make_learner` and
  :meth:`~RayAdapterHost.make_executor` give the matching learner and sandbox pool.
- :class:`RayLearner`: the learner interface, each step on the adapter's worker; it reaches the
  workers only through the host's public :class:`WorkerHost` interface.
- :class:`RayExecutorPool`: ``Executor.execute_many`` over actors, so sandbox checks use the
  cluster's CPUs.
- :class:`ActorMap`: a stateless map over actors holding a replica (the surrogate
  environment's frozen model); a lost actor costs a retry.
- :func:`connect`, :class:`ClusterError`, :class:`WorkerLostError`.

Ray is an optional dependency (``pip install 'redqueen[ray]'``); nothing here imports it until
a cluster object is built. Results match the single-process run: every generation row samples
from its own seeded stream (see :func:`redqueen.engine.backends._common.row_seeds`).
"""

from __future__ import annotations

from redqueen.engine.distributed._cluster import ClusterError, WorkerLostError, connect
from redqueen.engine.distributed._executor import RayExecutorPool
from redqueen.engine.distributed._host import RayAdapterHost
from redqueen.engine.distributed._learner import PendingStats, RayLearner, WorkerHost
from redqueen.engine.distributed._map import ActorMap
from redqueen.engine.distributed._worker import HostWorker

__all__ = [
    "ActorMap",
    "ClusterError",
    "HostWorker",
    "PendingStats",
    "RayAdapterHost",
    "RayExecutorPool",
    "RayLearner",
    "WorkerHost",
    "WorkerLostError",
    "connect",
]
