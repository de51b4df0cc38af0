"""The resumable training loop of pretraining: schedule, checkpoints and the loss measure.

The order of each epoch's sequences and its documents are functions of the seed, so a
checkpoint (``state.pt``) holds only the model, the optimizer, the step and the logged losses,
and running the same command again continues exactly where a run stopped.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from redqueen.tinycoder._documents import _atomic_save, _Data
from redqueen.tinycoder.splits import progress_bar

__all__ = ["bf16_is_faster"]


def _lr_at(step: int, total: int, peak: float, time_fraction: float = 0.0) -> float:
    """Linear warm-up over 5% of the steps, then cosine decay to 10% of ``peak``.

    ``time_fraction`` (elapsed / time budget) moves the decay along when the time budget,
    not the step count, is what ends the run.
    """
    warmup = max(total // 20, 1)
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = max((step - warmup) / max(total - warmup, 1), min(time_fraction, 1.0))
    return peak * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def bf16_is_faster(threads: int, size: int = 512, repeats: int = 5) -> bool:
    """Whether a bf16 matmul beats float32 on this CPU (many CPUs without bf16 units run it
    at a small fraction of the float32 rate)."""
    torch.set_num_threads(threads)
    a = torch.randn(size, size)
    timings = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = a.to(dtype)
        x @ x
        t0 = time.perf_counter()
        for _ in range(repeats):
            x @ x
        timings[dtype] = time.perf_counter() - t0
    return timings[torch.bfloat16] < timings[torch.float32]


@dataclass
class _TrainState:
    """Where training stands: what a checkpoint holds, and how the run ended."""

    step: int = 0
    seconds: float = 0.0  # training time, all chunks
    losses: list[float] = field(default_factory=list)
    earlier_seconds: float = 0.0  # wall time of earlier chunks
    total: int = 0
    paused: bool = False
    per_epoch: int = 0


#: What a training checkpoint (``state.pt``) holds.
_STATE_KEYS = ("model", "optimizer", "total", "size", "rng", "step", "seconds", "losses")


def _load_state(path: Path) -> dict:
    """A training checkpoint, read with torch's restricted unpickler (``weights_only=True``):
    it builds tensors and plain containers only and refuses any other global before calling
    it, so a crafted ``state.pt`` cannot run code. A refused or damaged file ends the command
    with one line and status 2, naming it.
    """
    import pickle

    problem = None
    try:
        saved = torch.load(path, weights_only=True)
    except pickle.UnpicklingError:
        problem = "holds more than tensors and plain data; refused, since loading it could run code"
    except Exception as error:  # torch raises many types for a damaged file
        problem = f"cannot be loaded ({type(error).__name__})"
    else:
        if not isinstance(saved, dict) or any(key not in saved for key in _STATE_KEYS):
            problem = "is not a training checkpoint of this script"
    if problem is not None:
        print(f"error: {path} {problem}; remove it to start afresh", file=sys.stderr)
        raise SystemExit(2)
    return saved


def _train(
    model: LlamaForCausalLM,
    data: _Data,
    per_epoch: int,
    args: argparse.Namespace,
    *,
    bf16: bool,
    work: Path,
) -> _TrainState:
    """Every sequence of every epoch once, in a seeded order, checkpointed and resumable.

    The order of epoch ``e`` is a permutation seeded by ``(seed, e)`` and the documents of an
    epoch are a function of the seed too, so a checkpoint needs only the model, the optimizer,
    the step and the logged losses to continue exactly. Returns where training stands.
    """
    device = torch.device(args.device)
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        fused=device.type == "cuda",
    )
    steps_per_epoch = per_epoch // args.batch_size
    total = max(1, args.epochs * steps_per_epoch)
    if args.tokens is not None:
        total = min(total, max(1, int(args.tokens) // (args.batch_size * args.seq_len)))
    if args.max_steps is not None:
        total = min(total, args.max_steps)
    budget = None if args.max_minutes is None else 60.0 * args.max_minutes
    state = _TrainState()
    path = work / "state.pt"
    stop_file = work / "STOP"
    if path.is_file():
        saved = _load_state(path)
        if saved["total"] != total or saved["size"] != args.size:
            print(
                f"error: {path} is from a run with {saved['total']} steps of size "
                f"{saved['size']}, not {total} of {args.size}; remove it to start afresh",
                file=sys.stderr,
            )
            raise SystemExit(2)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state.step, state.seconds, state.losses = saved["step"], saved["seconds"], saved["losses"]
        state.earlier_seconds = saved.get("wall_seconds", 0.0)
        torch.set_rng_state(saved["rng"])

    def save() -> None:
        _atomic_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "total": total,
                "size": args.size,
                "wall_seconds": state.earlier_seconds + time.time() - t_wall,
                "rng": torch.get_rng_state(),
                "step": state.step,
                "seconds": state.seconds,
                "losses": state.losses,
            },
            path,
        )

    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
    model.train()
    t_wall = t_chunk = last_save = time.time()
    seconds_before = state.seconds
    paused = False
    with progress_bar() as bar:
        task = bar.add_task("train", total=total, completed=state.step, info="")
        while state.step < total and not paused:
            epoch, position = divmod(state.step, max(steps_per_epoch, 1))
            if epoch >= args.epochs:
                break
            seqs, masks = data.epoch(epoch)
            order = torch.randperm(
                len(seqs), generator=torch.Generator().manual_seed(args.seed * 1000 + epoch)
            )
            for b in range(position, steps_per_epoch):
                now = time.time()
                elapsed = seconds_before + now - t_chunk
                if state.step >= total or (budget is not None and elapsed > budget):
                    total = state.step
                    break
                if (
                    args.stop_after_minutes is not None
                    and now - t_wall > 60 * args.stop_after_minutes
                ) or (args.stop_at_step is not None and state.step >= args.stop_at_step):
                    paused = True
                    break
                if stop_file.exists():  # someone asked this run to checkpoint and stop
                    stop_file.unlink(missing_ok=True)
                    paused = True
                    break
                fraction = elapsed / budget if budget else 0.0
                for group in optimizer.param_groups:
                    group["lr"] = _lr_at(state.step, total, args.lr, fraction)
                rows = order[b * args.batch_size : (b + 1) * args.batch_size]
                batch = seqs[rows].long().to(device)  # (batch, seq)
                labels = batch.masked_fill(masks[rows].to(device) == 0, -100)
                with autocast:
                    loss = model(input_ids=batch, labels=labels).loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                if state.step % 10 == 0:
                    state.losses.append(round(loss.item(), 4))
                    bar.update(
                        task,
                        completed=state.step + 1,
                        info=f"epoch {epoch + 1} loss {state.losses[-1]:.3f}",
                    )
                state.step += 1
                state.seconds = seconds_before + time.time() - t_chunk
                if time.time() - last_save > 60 * args.checkpoint_minutes:
                    save()
                    last_save = time.time()
            else:
                continue
            break
        bar.update(task, completed=state.step)
    save()
    model.eval()
    state.total, state.paused, state.per_epoch = total, paused, steps_per_epoch
    return state


@torch.no_grad()
def _mean_loss(
    model: LlamaForCausalLM, seqs: torch.Tensor, masks: torch.Tensor, args: argparse.Namespace
) -> float:
    """Mean next-token loss on trained-on tokens over the first ``loss_batches`` batches."""
    device = torch.device(args.device)
    model.eval()
    total, count = 0.0, 0
    for b in range(args.loss_batches):
        batch = seqs[b * args.batch_size : (b + 1) * args.batch_size].long().to(device)
        if len(batch) == 0:
            break
        mask = masks[b * args.batch_size : (b + 1) * args.batch_size].to(device)
        total += model(input_ids=batch, labels=batch.masked_fill(mask == 0, -100)).loss.item()
        count += 1
    return total / max(count, 1)
