"""The stand-in for torch._dynamo (autograder/rules/eager_dynamo.py) that training preloads instead of the real
module (0.9 s of CPU, issue 24): the optimizers the exercises use need nothing else of it and step exactly as
with the real module, and torch.compile is still refused under the by-hand guard.

One fresh process (about 2 s of CPU): this test process may have imported the real module already."""

import subprocess
import sys

from autograder.components import BY_NAME

SCRIPT = r"""
import sys
import torch
import autograder.rules.eager_dynamo as eager
from autograder import rules

def train(make_optimizer):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
    optimizer = make_optimizer(model.parameters())
    x = torch.randn(8, 5)
    for step in range(1, 6):
        for group in optimizer.param_groups:
            group["lr"] = 1e-2 * step
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]

OPTIMIZERS = {
    "adam": lambda ps: torch.optim.Adam(ps, lr=0.0, betas=(0.9, 0.98), eps=1e-9),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.0),
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.0, momentum=0.9),
}
assert isinstance(sys.modules["torch._dynamo"], eager.EagerDynamo)
with rules.guard("training"):
    stood_in = {name: train(make) for name, make in OPTIMIZERS.items()}
# no name beyond graph_break and disable was asked for, or the real module would be in place
assert isinstance(sys.modules["torch._dynamo"], eager.EagerDynamo), "the stand-in fell back"
assert "sympy" not in sys.modules

try:
    with rules.guard("training"):
        torch.compile(lambda t: t * 2)(torch.ones(2))
except rules.ForbiddenCall as e:
    print("REFUSED", e)
else:
    print("NOT REFUSED")

eager.real()
assert not isinstance(sys.modules["torch._dynamo"], eager.EagerDynamo)
for name, make in OPTIMIZERS.items():
    for a, b in zip(stood_in[name], train(make)):
        assert torch.equal(a, b), name
print("SAME STEPS")
"""


def test_training_preloads_the_stand_in():
    assert BY_NAME["training"].preload == ("autograder.rules.eager_dynamo",)


def test_optimizers_step_the_same_and_compile_is_still_refused():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "REFUSED" in run.stdout and "NOT REFUSED" not in run.stdout, run.stdout
    assert "torch.compile" in run.stdout, run.stdout
    assert "SAME STEPS" in run.stdout, run.stdout
