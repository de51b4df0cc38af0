"""The task buffer that conditions proposals, and task identity and complexity summaries.

Teachers propose new tasks conditioned on K reference examples drawn from a buffer of earlier
valid tasks (Absolute Zero Reasoner's reference buffer). The buffer starts from the domain's
seed examples (the identity program for the code domain), grows with every valid proposal and,
when full, forgets its oldest entries first, so the newest task is always kept.
:class:`TaskBuffers` keeps one buffer per proposer, for agents that must stay independent (the
self-play baseline's solo agents). Examples are frozen dataclasses of plain data (the code
domain's :class:`~redqueen.verifiers.Triplet`); checkpoints hold their fields as tuples.

:func:`task_signature` names a task by its program up to renaming of local identifiers, so
``coverage`` (distinct signatures seen) counts genuinely different programs;
:func:`complexity_score` summarises the verifier's complexity metrics in one number.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
import math
import random
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from redqueen.verifiers import Triplet

#: The buffer's first entry: the identity program on one input (as Absolute Zero seeds it).
IDENTITY_TRIPLET = Triplet(program="def f(x):\n    return x", input="'hello'", output="'hello'")

_BUILTIN_NAMES = frozenset(dir(builtins))


def _example_type(seed: tuple[Any, ...], example_type: type | None) -> type:
    if example_type is not None:
        return example_type
    return type(seed[0]) if seed else Triplet


class TaskBuffer:
    """A bounded first-in-first-out buffer of reference examples.

    Args:
        capacity: Maximum number of examples; the oldest are dropped first.
        seed: Initial examples (default: the code domain's identity program).
        example_type: The dataclass of the examples, to restore them from a checkpoint
            (default: the type of the first seed example, else :class:`Triplet`).

    Raises:
        ValueError: If ``capacity`` is below 1.
    """

    def __init__(
        self,
        *,
        capacity: int,
        seed: Iterable[Any] = (IDENTITY_TRIPLET,),
        example_type: type | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"TaskBuffer.capacity must be >= 1, got {capacity}")
        seed = tuple(seed)
        self.capacity = int(capacity)
        self.example_type = _example_type(seed, example_type)
        self._items: deque[Any] = deque(maxlen=self.capacity)
        for example in seed:
            self.add(example)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    @property
    def newest(self) -> Any | None:
        """The most recently added example (``None`` when empty)."""
        return self._items[-1] if self._items else None

    def add(self, example: Any) -> None:
        """Append an example, dropping the oldest one when the buffer is full."""
        self._items.append(example)

    def extend(self, examples: Iterable[Any]) -> None:
        """Append several examples in order."""
        for example in examples:
            self.add(example)

    def sample(self, k: int, rng: random.Random) -> list[Any]:
        """Draw ``k`` references: without replacement when the buffer holds enough, else with.

        Args:
            k: Number of references (0 gives an empty list).
            rng: Source of randomness (the environment's seeded generator).
        """
        if k <= 0 or not self._items:
            return []
        items = list(self._items)
        if len(items) >= k:
            return rng.sample(items, k)
        return [items[rng.randrange(len(items))] for _ in range(k)]

    def state_dict(self) -> dict[str, Any]:
        """Capacity and examples (as tuples of their fields), oldest first; plain data."""
        return {
            "capacity": self.capacity,
            "items": [dataclasses.astuple(example) for example in self._items],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.capacity = int(state["capacity"])
        self._items = deque(
            (self.example_type(*fields) for fields in state["items"]), maxlen=self.capacity
        )


class TaskBuffers:
    """One :class:`TaskBuffer` per proposer, for agents that must not share references.

    The self-play baseline's solo agents are independent replicas: each proposes from, and
    adds to, only its own buffer, so one agent's tasks never condition another's proposals.

    Args:
        capacity: Capacity of each buffer.
        owners: Owners known from the start (a buffer is made on first use for any other).
        seed: Initial examples of every new buffer (default: the code domain's identity program).
        example_type: The dataclass of the examples (default: as for :class:`TaskBuffer`).
    """

    def __init__(
        self,
        *,
        capacity: int,
        owners: Iterable[str] = (),
        seed: Iterable[Any] = (IDENTITY_TRIPLET,),
        example_type: type | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"TaskBuffers.capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._seed = tuple(seed)
        self.example_type = _example_type(self._seed, example_type)
        self._buffers: dict[str, TaskBuffer] = {}
        for owner in owners:
            self.of(owner)

    def of(self, owner: str) -> TaskBuffer:
        """The buffer of ``owner`` (made, from the seed examples, on first use)."""
        if owner not in self._buffers:
            self._buffers[owner] = TaskBuffer(
                capacity=self.capacity, seed=self._seed, example_type=self.example_type
            )
        return self._buffers[owner]

    def drop(self, owner: str) -> None:
        """Forget an owner's buffer (no error if unknown)."""
        self._buffers.pop(owner, None)

    @property
    def owners(self) -> list[str]:
        """Owners with a buffer, in first-use order."""
        return list(self._buffers)

    def __len__(self) -> int:
        """Examples held over every buffer."""
        return sum(len(b) for b in self._buffers.values())

    def state_dict(self) -> dict[str, Any]:
        """Capacity, seed examples and each owner's buffer, as plain data."""
        return {
            "capacity": self.capacity,
            "seed": [dataclasses.astuple(example) for example in self._seed],
            "buffers": {owner: b.state_dict() for owner, b in self._buffers.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.capacity = int(state["capacity"])
        self._seed = tuple(self.example_type(*fields) for fields in state["seed"])
        self._buffers = {}
        for owner, buffer_state in state["buffers"].items():
            self._buffers[owner] = TaskBuffer(
                capacity=self.capacity, seed=(), example_type=self.example_type
            )
            self._buffers[owner].load_state_dict(buffer_state)


def buffer_for(buffer: TaskBuffer | TaskBuffers, owner: str) -> TaskBuffer:
    """The buffer ``owner`` proposes from: the shared one, or its own in a :class:`TaskBuffers`."""
    return buffer.of(owner) if isinstance(buffer, TaskBuffers) else buffer


def buffer_size(buffer: TaskBuffer | TaskBuffers) -> float:
    """Examples in the buffer a proposer sees: the shared buffer's size, or the mean over the
    proposers' own buffers."""
    if isinstance(buffer, TaskBuffers):
        owners = buffer.owners
        return float(np.mean([len(buffer.of(o)) for o in owners])) if owners else 0.0
    return float(len(buffer))


class _Canonical(ast.NodeTransformer):
    """Renames locally bound identifiers to ``v0, v1, ...`` in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        if name == "f" or name in _BUILTIN_NAMES:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._rename(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._rename(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._rename(node.name)
        node.returns = None
        if (
            node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        ):
            node.body = node.body[1:] or [ast.Pass()]  # docstrings do not change the task
        self.generic_visit(node)
        return node


def normalise_program(program: str) -> str:
    """Canonical source of a program: identifiers renamed, docstrings, comments and layout dropped.

    Programs that do not parse are returned with surrounding whitespace stripped.
    """
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program.strip()
    try:
        return ast.unparse(_Canonical().visit(tree))
    except (RecursionError, ValueError):
        return program.strip()


def task_signature(program: str) -> str:
    """A short hash naming a program up to renaming of its local identifiers (12 hex digits)."""
    return hashlib.sha1(normalise_program(program).encode()).hexdigest()[:12]


def complexity_score(metrics: Mapping[str, float]) -> float:
    """One number summarising a program's complexity: cyclomatic complexity plus
    ``log2(1 + Halstead volume)``, so branching and size both count and neither dominates."""
    cyclomatic = float(metrics.get("cyclomatic", 0.0))
    volume = max(0.0, float(metrics.get("halstead_volume", 0.0)))
    return cyclomatic + math.log2(1.0 + volume)
