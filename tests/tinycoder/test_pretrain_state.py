"""The pretraining checkpoint (``DIR-checkpoint/state.pt``) is data: it resumes training exactly,
and a crafted one is refused with one line instead of run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import LlamaForCausalLM

from redqueen.tinycoder._training import _train
from redqueen.tinycoder.model import SIZES, tiny_coder_config
from redqueen.tinycoder.pretrain import parse_args

SEQ_LEN = 16


class _Data:
    """Eight random sequences per epoch, the same for a given epoch."""

    def epoch(self, epoch: int) -> tuple[torch.Tensor, torch.Tensor]:
        seqs = torch.randint(0, 32, (8, SEQ_LEN), generator=torch.Generator().manual_seed(epoch))
        return seqs, torch.ones_like(seqs)


def _model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = tiny_coder_config(
        vocab_size=32,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        max_position_embeddings=SEQ_LEN,
        **SIZES["micro"],
    )
    return LlamaForCausalLM(config)


def _args(tmp_path: Path, **settings):
    args = parse_args(
        [
            "--out",
            str(tmp_path / "m"),
            "--size",
            "micro",
            "--seq-len",
            str(SEQ_LEN),
            "--batch-size",
            "2",
            "--epochs",
            "1",
            "--max-steps",
            "4",
            "--lr",
            "1e-3",
        ]
    )
    vars(args).update(settings)
    return args


def test_training_resumes_from_its_checkpoint_exactly(tmp_path):
    (tmp_path / "whole").mkdir()
    whole = _model()
    _train(whole, _Data(), 8, _args(tmp_path), bf16=False, work=tmp_path / "whole")
    work = tmp_path / "split"
    work.mkdir()
    paused = _train(_model(), _Data(), 8, _args(tmp_path, stop_at_step=2), bf16=False, work=work)
    assert paused.paused and paused.step == 2
    resumed = _model()  # a fresh process: the weights, optimizer and RNG come from state.pt
    state = _train(resumed, _Data(), 8, _args(tmp_path), bf16=False, work=work)
    assert state.step == 4 and not state.paused
    expected = whole.state_dict()
    assert all(torch.equal(expected[k], v) for k, v in resumed.state_dict().items())


class _Payload:
    """A pickle that creates a file when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_state_pt_is_refused_without_running_it(tmp_path, capsys):
    work = tmp_path / "m-checkpoint"
    work.mkdir()
    marker = tmp_path / "pwned"
    torch.save({"model": _Payload(marker)}, work / "state.pt")
    with pytest.raises(SystemExit) as exit_info:
        _train(_model(), _Data(), 8, _args(tmp_path), bf16=False, work=work)
    assert exit_info.value.code == 2
    assert not marker.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "state.pt" in err[0] and "could run code" in err[0]
