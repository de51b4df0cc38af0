"""Seeds and generators: one rule for the generator every draw takes and for integer seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from redqueen.genomes import SEED_MODULUS, check_generator, check_seed, generator_seed


def test_any_integer_is_a_seed_taken_modulo_2_to_the_64():
    assert [generator_seed(s) for s in (0, 7, SEED_MODULUS - 1)] == [0, 7, SEED_MODULUS - 1]
    assert generator_seed(-1) == SEED_MODULUS - 1 and generator_seed(SEED_MODULUS + 5) == 5
    assert check_seed(np.int64(-3), "f") == -3 and type(check_seed(np.int64(3), "f")) is int
    # numpy and torch take every value it returns
    np.random.default_rng(generator_seed(-1))
    torch.Generator().manual_seed(generator_seed(-1))


def test_what_is_not_an_integer_or_a_generator_is_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match=r"^SurrogateEnv: seed must be an integer, got float$"):
        check_seed(1.5, "SurrogateEnv")
    with pytest.raises(
        TypeError,
        match=r"^f: rng must be a torch\.Generator .*got numpy\.random\._generator\.Generator$",
    ):
        check_generator(np.random.default_rng(0), "f")
    gen = torch.Generator()
    assert check_generator(gen, "f") is gen
