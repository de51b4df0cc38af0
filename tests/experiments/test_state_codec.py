"""The data-only state codec: exact round trips of nested environment state, refusals that say where."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from redqueen.experiments.state_codec import StateCodecError, decode_state, encode_state


def _round_trip(state):
    document, tensors = encode_state(state)
    text = json.dumps(document, allow_nan=False)  # strict JSON: no NaN literals, no pickles
    return decode_state(json.loads(text), load_tensors(save_tensors(tensors)))


def _same(a, b) -> bool:
    """Equal in type, dtype, shape and every bit (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, torch.Generator):
        return torch.equal(a.get_state(), b.get_state())
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _adamw_state() -> dict:
    param = torch.nn.Parameter(torch.randn(3, 2))
    optimizer = torch.optim.AdamW([param], lr=1e-3, betas=(0.9, 0.95))
    param.grad = torch.ones_like(param)
    optimizer.step()
    return optimizer.state_dict()


def test_every_kind_of_plain_data_round_trips_exactly():
    shared = torch.randn(4, 3)
    state = {
        "tuple": (1, 2.5, None, True, "x"),
        7: "an int key",
        (1, "a"): "a tuple key",
        "$looks_like_a_tag": {"$tensor": "not a tensor"},
        "floats": [0.1, -0.0, float("nan"), float("inf"), -float("inf"), 1e-310],
        "big_int": 2**130,
        "tensor": shared,
        "same_tensor_again": shared,
        "view": shared[1:3, ::2],
        "bf16": torch.arange(5, dtype=torch.bfloat16),
        "int8": torch.tensor([-3, 4], dtype=torch.int8),
        "empty": torch.zeros(0, 5),
        "torch_rng_state": torch.Generator().manual_seed(3).get_state(),
        "torch_generator": torch.Generator().manual_seed(4),
        "numpy_rng": np.random.default_rng(5).bit_generator.state,
        "legacy_numpy_rng": np.random.RandomState(6).get_state(legacy=False),
        "python_rng": random.Random(7).getstate(),
        "uint16": np.arange(6, dtype=np.uint16).reshape(2, 3),
        "big_endian": np.array([1.5, -2.0], dtype=">f8"),
        "strings": np.array(["ab", "c"]),
        "np_scalars": [np.float32(0.1), np.int64(-(2**40)), np.bool_(True), np.longdouble(1.1)],
        "bytes": b"\x00\xff",
        "set": {3, 1, 2},
        "dtype": torch.float16,
        "optimizer": _adamw_state(),
    }
    assert _same(_round_trip(state), state)


def test_a_restored_numpy_and_python_rng_continue_the_same_stream():
    rng, py = np.random.default_rng(0), random.Random(0)
    rng.random(3), py.random()
    restored = _round_trip({"np": rng.bit_generator.state, "py": py.getstate()})
    copy, copy_py = np.random.default_rng(), random.Random()
    copy.bit_generator.state = restored["np"]
    copy_py.setstate(restored["py"])
    assert copy.random() == rng.random() and copy_py.random() == py.random()


def test_an_optimizer_state_loads_back_into_an_optimizer():
    state = _round_trip(_adamw_state())
    param = torch.nn.Parameter(torch.zeros(3, 2))
    optimizer = torch.optim.AdamW([param])
    optimizer.load_state_dict(state)
    assert optimizer.param_groups[0]["betas"] == (0.9, 0.95)
    assert set(optimizer.state_dict()["state"]) == {0}


class _Custom:
    pass


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"members": [{"genome": _Custom()}]}, "state['members'][0]['genome']"),
        ({"cases": np.array([object()])}, "state['cases']"),
        ({"f": lambda: 0}, "state['f']"),
    ],
)
def test_values_that_are_not_data_are_refused_naming_where(value, where):
    with pytest.raises(StateCodecError, match=__import__("re").escape(where)):
        encode_state(value)


@pytest.mark.parametrize(
    "document",
    [
        {"$pickle": "gASV"},
        {"$tensor": "t9"},
        {"$float": "1e400"},
        {"$dtype": "Tensor"},
        {"$tuple": "not a list"},
    ],
)
def test_malformed_documents_are_refused(document):
    with pytest.raises(StateCodecError):
        decode_state({"x": document}, {})
