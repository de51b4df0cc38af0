"""Data-only serialisation of environment state: tensors in safetensors, everything else JSON.

A checkpoint must never be able to run code on the machine that reads it, so state is not
pickled. :func:`encode_state` walks any nested state (what ``Environment.state_dict()`` returns)
and splits it into a JSON document and a flat ``{key: tensor}`` mapping for safetensors;
:func:`decode_state` puts them back together. The round trip is exact: tuples stay tuples, dict
keys keep their type (``int`` keys of optimizer states included), numpy and torch dtypes, shapes
and values are preserved bit for bit, floats keep every bit through ``repr``.

Supported values: ``dict`` (any hashable supported keys), ``list``, ``tuple``, ``set``,
``frozenset``, ``str``, ``int`` (any size), ``float`` (``nan`` and ``inf`` included), ``bool``,
``None``, ``bytes``, numpy arrays (not of dtype ``object``) and scalars, torch tensors (stored on
the CPU; a torch generator's ``get_state()`` is one), ``torch.Generator`` and ``torch.dtype``.
numpy ``bit_generator.state`` dicts and ``random.getstate()`` tuples are made of these. A new
plain-data field in an environment's state therefore needs no change here; anything else is
refused when the checkpoint is written, naming where in the state it sits.

In the JSON document a value that is not plain JSON is a one-key object whose key starts with
``$`` (``{"$tuple": [...]}``, ``{"$tensor": "t3"}``, ...); a dict of string keys that would look
like one is written in the ``$dict`` pair form instead, so the two never collide.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import numpy as np
import torch

#: A JSON document as ``json.loads`` returns it (what :func:`encode_state` writes).
JSON: TypeAlias = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]


class StateCodecError(ValueError):
    """A value cannot be encoded, or an encoded document is malformed (the message says where)."""


def encode_state(state: object) -> tuple[JSON, dict[str, torch.Tensor]]:
    """Split ``state`` into a JSON-serialisable document and the tensors it refers to.

    Tensors met more than once (the same object) are stored once.

    Returns:
        ``(document, tensors)``: ``json.dumps(document)`` works, and ``tensors`` maps keys to
        contiguous CPU tensors that share no memory (what ``safetensors.torch.save`` needs).

    Raises:
        StateCodecError: Naming the path of a value of an unsupported type.
    """
    encoder = _Encoder()
    return encoder.encode(state, "state"), encoder.tensors


def decode_state(document: object, tensors: Mapping[str, torch.Tensor]) -> object:
    """Inverse of :func:`encode_state`.

    Raises:
        StateCodecError: If the document names an unknown tag, a missing tensor or is malformed.
    """
    return _decode(document, tensors, "state")


class _Encoder:
    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self._seen: dict[int, tuple[torch.Tensor, str]] = {}

    def encode(self, value: object, where: str) -> JSON:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) is int:
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, torch.Tensor):
            return self._tensor(value, where)
        if isinstance(value, (np.ndarray, np.generic)):
            return self._numpy(value, where)
        if isinstance(value, (Mapping, tuple, list, set, frozenset)):
            return self._container(value, where)
        if isinstance(value, bytes):
            return {"$bytes": base64.b64encode(value).decode("ascii")}
        if isinstance(value, torch.dtype):
            return {"$dtype": str(value).removeprefix("torch.")}
        if isinstance(value, torch.Generator):
            return {
                "$generator": self._tensor(value.get_state(), where),
                "device": str(value.device),
            }
        if isinstance(value, (int, float)):  # subclasses (IntEnum, numpy-derived): keep the value
            return self.encode(int(value) if isinstance(value, int) else float(value), where)
        raise StateCodecError(
            f"{where}: cannot store a {type(value).__module__}.{type(value).__qualname__} in a "
            "checkpoint (state must be plain data: dicts, lists, tuples, numbers, strings, arrays, tensors)"
        )

    def _numpy(self, value: np.ndarray | np.generic, where: str) -> JSON:
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise StateCodecError(f"{where}: numpy arrays of dtype object cannot be stored")
            return {
                "$ndarray": self._store(_raw_bytes(value)),
                "dtype": value.dtype.str,
                "shape": list(value.shape),
            }
        if value.dtype.kind in "biuf" and value.dtype.itemsize <= 8:  # exact as a Python number
            return {"$npscalar": self.encode(value.item(), where), "dtype": value.dtype.str}
        return {
            "$npscalar": {"$bytes": base64.b64encode(value.tobytes()).decode("ascii")},
            "dtype": value.dtype.str,
        }

    def _container(
        self,
        value: Mapping[object, object]
        | tuple[object, ...]
        | list[object]
        | set[object]
        | frozenset[object],
        where: str,
    ) -> JSON:
        if isinstance(value, Mapping):
            return self._mapping(value, where)
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        items = sorted(value, key=repr)
        tag = "$set" if isinstance(value, set) else "$frozenset"
        return {tag: [self.encode(v, f"{where}{{{v!r}}}") for v in items]}

    def _mapping(self, value: Mapping[object, object], where: str) -> JSON:
        named = {k: v for k, v in value.items() if isinstance(k, str) and not k.startswith("$")}
        if len(named) == len(value):
            return {k: self.encode(v, f"{where}[{k!r}]") for k, v in named.items()}
        return {
            "$dict": [
                [self.encode(k, f"{where} key {k!r}"), self.encode(v, f"{where}[{k!r}]")]
                for k, v in value.items()
            ]
        }

    def _tensor(self, value: torch.Tensor, where: str) -> JSON:
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            key = seen[1]
        else:
            key = self._store(value.detach().to("cpu", copy=True).contiguous())
            self._seen[id(value)] = (value, key)
        node: dict[str, JSON] = {"$tensor": key}
        if value.requires_grad:
            node["requires_grad"] = True
        return node

    def _store(self, tensor: torch.Tensor) -> str:
        key = f"t{len(self.tensors)}"
        self.tensors[key] = tensor
        return key


def _decode(node: object, tensors: Mapping[str, torch.Tensor], where: str) -> object:
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list):
        return [_decode(v, tensors, f"{where}[{i}]") for i, v in enumerate(node)]
    if not isinstance(node, dict):
        raise StateCodecError(f"{where}: unexpected {type(node).__name__}")
    tag = next((k for k in node if k.startswith("$")), None)
    if tag is None:
        return {k: _decode(v, tensors, f"{where}[{k!r}]") for k, v in node.items()}
    reader = _READERS.get(tag)
    if reader is None:
        raise StateCodecError(f"{where}: unknown tag {tag!r}")
    try:
        return reader(node, tensors, where)
    except StateCodecError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as error:
        raise StateCodecError(
            f"{where}: malformed {tag} ({type(error).__name__}: {error})"
        ) from None


def _raw_bytes(array: np.ndarray) -> torch.Tensor:
    """An array's bytes (C order, its own byte order) as a uint8 tensor: exact for every dtype."""
    return torch.from_numpy(
        np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=np.uint8).copy()
    )


def _tensor_of(key: object, tensors: Mapping[str, torch.Tensor], where: str) -> torch.Tensor:
    if not isinstance(key, str) or key not in tensors:
        raise StateCodecError(f"{where}: tensor {key!r} is missing from the tensor file")
    return tensors[key]


def _read_tensor(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> torch.Tensor:
    tensor = _tensor_of(node["$tensor"], tensors, where).clone()
    return tensor.requires_grad_() if node.get("requires_grad") else tensor


def _read_ndarray(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> np.ndarray:
    raw = _tensor_of(node["$ndarray"], tensors, where).numpy().tobytes()
    shape = tuple(int(n) for n in node["shape"])
    return np.frombuffer(raw, dtype=np.dtype(node["dtype"])).reshape(shape).copy()


def _read_npscalar(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> np.generic:
    dtype = np.dtype(node["dtype"])
    value = _decode(node["$npscalar"], tensors, where)
    if isinstance(value, bytes):
        return np.frombuffer(value, dtype=dtype)[0]
    return dtype.type(value)


def _read_dict(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> dict[object, object]:
    return {
        _decode(k, tensors, f"{where} key"): _decode(v, tensors, f"{where}[{k!r}]")
        for k, v in node["$dict"]
    }


def _read_dtype(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> torch.dtype:
    dtype = getattr(torch, str(node["$dtype"]), None)
    if not isinstance(dtype, torch.dtype):
        raise StateCodecError(f"{where}: unknown torch dtype {node['$dtype']!r}")
    return dtype


def _read_generator(
    node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str
) -> torch.Generator:
    generator = torch.Generator(device=str(node.get("device", "cpu")))
    generator.set_state(_read_tensor(node["$generator"], tensors, where))
    return generator


def _read_float(node: dict[str, Any], tensors: Mapping[str, torch.Tensor], where: str) -> float:
    text = node["$float"]
    if text not in ("nan", "inf", "-inf"):
        raise StateCodecError(f"{where}: $float holds {text!r}, expected nan, inf or -inf")
    return float(text)


def _items(
    node: dict[str, Any], tag: str, tensors: Mapping[str, torch.Tensor], where: str
) -> list[object]:
    values = node[tag]
    if not isinstance(values, list):
        raise StateCodecError(f"{where}: {tag} must hold a list")
    return [_decode(v, tensors, f"{where}[{i}]") for i, v in enumerate(values)]


_READERS: dict[str, Callable[[dict[str, Any], Mapping[str, torch.Tensor], str], object]] = {
    "$tensor": _read_tensor,
    "$ndarray": _read_ndarray,
    "$npscalar": _read_npscalar,
    "$dict": _read_dict,
    "$tuple": lambda node, tensors, where: tuple(_items(node, "$tuple", tensors, where)),
    "$set": lambda node, tensors, where: set(_items(node, "$set", tensors, where)),
    "$frozenset": lambda node, tensors, where: frozenset(
        _items(node, "$frozenset", tensors, where)
    ),
    "$bytes": lambda node, tensors, where: base64.b64decode(node["$bytes"], validate=True),
    "$dtype": _read_dtype,
    "$generator": _read_generator,
    "$float": _read_float,
}
