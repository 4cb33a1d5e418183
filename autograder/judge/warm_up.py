"""The zygote's warm-up: the paths every worker runs, run once in the zygote so that each worker inherits them warm.

A worker is a fresh fork. Whatever Python and torch do the first time a path runs in a process (specialising
the bytecode of the executor, the wire and torch's Python layers: nn.Module, the layers' forward, autograd's
entry, Adam's step; filling torch's lazy caches) each worker paid again, before its first result. Measured on
a section's worth of operations (an EncoderLayer built, twenty calls, half with backward, an Inspect, each reply
encoded and decoded): 30 ms in a worker forked from the bare zygote, 22 ms from a warmed one, 17.7 ms for the
same operations run a second time in the worker (median of 5 forks each).

The workload is the kit's own code, written here: a model of torch's layers (nn.TransformerEncoderLayer, an
embedding, a generator) built, inspected, loaded, called with and without backward, decoded greedily and trained
with Adam on a schedule, through the same Executor and the same wire a worker uses. It implements no exercise
(torch's layers are what the exercises forbid), and it leaves nothing behind: its package leaves sys.modules, the
executor and every object it made are collected before the zygote freezes its heap and the random generators are as
they were (`tests/test_judge_warm_up.py`).
"""

from __future__ import annotations

import gc
import importlib
import random
import socket
import sys
import tempfile
import weakref
from pathlib import Path

import numpy as np
import torch

from ..components import COMPONENTS
from ..student_code.executor import Executor
from ..student_code.interface import Build, Call, Inspect
from . import wire

PACKAGE = "_zygote_warm_up"  # not a worker's package name (load_package's are _submission_<n>)

WORKLOAD = """
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, vocab=7, d_model=8, heads=2, d_ff=16, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout, batch_first=True) for _ in range(2)
        )
        self.norm = nn.LayerNorm(d_model)
        self.generator = nn.Linear(d_model, vocab)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("scale", torch.tensor(float(d_model)).sqrt())

    def forward(self, tokens, mask=None):
        x = self.dropout(self.embedding(tokens) * self.scale)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.generator(self.norm(x))


def causal(m):
    return torch.triu(torch.ones(m, m, dtype=torch.bool), diagonal=1)


def decode(model, tokens, steps):
    ys = tokens[:, :1]
    with torch.no_grad():
        for _ in range(steps):
            logits = model(ys, causal(ys.shape[1]))
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return ys


def train(model, batches, warmup=4):
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) ** -0.5, (s + 1) * warmup**-1.5))
    model.train()
    losses = []
    for tokens in batches:
        logits = model(tokens[:, :-1], causal(tokens.shape[1] - 1))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    return losses


def statistics(a):
    a = np.asarray(a, dtype=np.float64)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), np.where(a > 0, a, 0.0).mean(axis=-1)
"""


def run() -> None:
    """Run the workload through an Executor and the wire, then leave nothing of it behind: not its package, not
    its objects, not a draw of the random generators (a student's module may draw at import, before any
    operation seeds them)."""
    # The components' preloads (training's: a stand-in for torch._dynamo, which torch.optim imports on first use
    # and the guard refuses during a call): once here instead of in every training worker, and before Adam below.
    for component in COMPONENTS:
        for name in component.preload:
            importlib.import_module(name)
    generators = torch.get_rng_state(), np.random.get_state(), random.getstate()
    folder = tempfile.TemporaryDirectory(prefix="warm-up-")
    try:
        (Path(folder.name) / "workload.py").write_text(WORKLOAD)
        module = _run(Path(folder.name))
    finally:
        folder.cleanup()
        torch.set_rng_state(generators[0])
        np.random.set_state(generators[1])
        random.setstate(generators[2])
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    gc.collect()
    if module() is not None:  # something still holds the workload: a worker would find it
        raise RuntimeError("the zygote's warm-up left its workload behind")


def _run(root: Path) -> weakref.ref:
    executor = Executor(root, package=PACKAGE)
    ours, theirs = socket.socketpair()
    try:
        tokens = torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(0))
        for dtype in (torch.float64, torch.float32):
            built = _through(
                executor, ours, theirs, Build("workload", "Model", dtype=dtype, train=True)
            )
            state = _through(executor, ours, theirs, Inspect(built.value)).value["state"]
            model = _through(
                executor, ours, theirs, Build("workload", "Model", state=state, dtype=dtype)
            ).value
            for backward in (True, False):
                _through(
                    executor, ours, theirs, Call(model, "forward", (tokens,), backward=backward)
                )
            _through(executor, ours, theirs, Call("workload", "decode", (model, tokens, 3)))
            _through(executor, ours, theirs, Call("workload", "train", (model, [tokens] * 3)))
        _through(executor, ours, theirs, Call("workload", "statistics", (np.ones((2, 3)),)))
        return weakref.ref(sys.modules[f"{PACKAGE}.workload"])
    finally:
        ours.close()
        theirs.close()


def _through(executor: Executor, ours: socket.socket, theirs: socket.socket, op):
    """`op` as a worker serves it: received from the judge's side, carried out, the reply sent back and loaded
    as the grading process loads it (scanned)."""
    wire.send(ours, op)
    reply = executor.run(
        wire.recv(theirs, trusted=True)
    )  # the kit's own workload: an error is raised
    wire.send_bytes(theirs, wire.dumps(reply))
    return wire.recv(ours)
