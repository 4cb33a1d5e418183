"""No free points (issue 11, item 7): code that computes nothing earns only the shape properties.

A submission that returns zeros, NaN or another constant (5, -3) of the right shape from every function and
forward (generated here: the reference with every returned tensor or array replaced, every gradient a constant's)
must fail every property that checks a value. NaN never passes a comparison unless the expected value is NaN
there, and every invariance (the student's output compared with itself) also checks that the output is not a
constant where the expected output is not. The nonzero constants found two holes on 28 November: a search
whose scores are one constant agreed with itself in eval mode and in train mode; a train whose losses are a
constant above H(q) matched a constant teacher_forcing_loss (both now ask for what no search or loss gives).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from autograder import KIT, registry
from autograder.components import NAMES
from autograder.student_code import Call, InProcessStudentCode, Inspect, StudentCode
from autograder.suite import core

PROPERTIES = registry.load(include_hidden=True)

# What constant output may earn: the properties declared Kind.SHAPE (structure and shapes alone: names of
# parameters, shapes and dtypes of outputs, ValueError for a bad head count, the device argument), and the static
# by-hand checks (issue 11 item 8 ties those to a behavioural property in the scoring, not in the property).
FREE = (core.Kind.SHAPE, core.Kind.STATIC)


def constant_like(value, fill: float):
    """`value` with every tensor and array replaced by `fill` (0 for bool and integer ones), shapes kept."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            return torch.full_like(value.detach(), fill)
        return torch.zeros_like(value)
    if isinstance(value, np.ndarray):
        if np.issubdtype(value.dtype, np.floating):
            return np.full_like(value, fill)
        return np.zeros_like(value)
    if type(value) is float:  # learning_rate returns a Python float
        return fill
    if isinstance(value, (tuple, list)):
        return type(value)(constant_like(v, fill) for v in value)
    if isinstance(value, dict):
        return {k: constant_like(v, fill) for k, v in value.items()}
    return value


class ComputesNothing(StudentCode):
    """The reference's modules (so shapes and parameter names are right), but every function and forward gives
    `fill`, and so does every buffer (a table the code would have computed); every gradient is a constant's, 0
    (NaN where `fill` is NaN)."""

    def __init__(self, fill: float):
        self.inner, self.fill = InProcessStudentCode(KIT / "solutions", "reference"), fill
        self.label = f"computes-nothing-{fill}"

    def run(self, op):
        reply = self.inner.run(op)
        if isinstance(op, Call):
            reply.value = constant_like(reply.value, self.fill)
            reply.attrs = constant_like(reply.attrs, self.fill)
            # a constant has no gradient (0); NaN spreads to every gradient
            grad = self.fill if math.isnan(self.fill) else 0.0
            reply.input_grads = constant_like(reply.input_grads, grad)
            reply.param_grads = constant_like(reply.param_grads, grad)
        elif isinstance(op, Inspect) and isinstance(reply.value, dict) and "state" in reply.value:
            params = set(reply.value["params"])
            reply.value["state"] = {
                k: v if k in params else constant_like(v, self.fill)
                for k, v in reply.value["state"].items()
            }
        return reply


def earned(student, component):
    """The properties of `component` that are not free (FREE) and pass on `student`."""
    return {
        o.property.name
        for o in (core.run_property(p, student) for p in PROPERTIES if p.component == component)
        if o.passed and o.property.kind not in FREE
    }


@pytest.mark.parametrize(
    "fill", [0.0, math.nan, 5.0, -3.0], ids=["zeros", "nan", "five", "minus-three"]
)
@pytest.mark.parametrize("component", NAMES)
def test_constant_output_earns_only_shape_points(component, fill):
    extra = earned(ComputesNothing(fill), component)
    assert not extra, f"output that is all {fill} earns {sorted(extra)} in {component}"


# The same two submissions as hostile examples (examples/hostile/{zeros,nan}_everywhere), graded by the judge:
# in the components they replace, only shape properties and the static by-hand check pass.
ATTACKED = ("attention", "multi_head", "positional_encoding")


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    from autograder.judge import sample
    from autograder.judge.limits import Limits
    from autograder.judge.scheduler import Options, grade

    base = tmp_path_factory.mktemp("free-points")
    sample.materialize(
        {"zeros": "hostile:zeros_everywhere", "nan": "hostile:nan_everywhere"}, base / "subs"
    )
    return grade(
        base / "subs",
        base / "out",
        # two students: one grading process (docs/speed.md, "One grading process for a small class")
        Options(jobs=1, limits=Limits(op_timeout=3, section_timeout=30, memory_mb=1024)),
    )


@pytest.mark.parametrize("student", ["zeros", "nan"])
def test_judge_gives_computing_nothing_only_shape_points(judged, student):
    outcomes = [
        o for o in judged[student].outcomes if o.property.component in ATTACKED and o.passed
    ]
    # Integration re-runs (the dependent component's first properties with the student's files) keep the kind
    # of the property they re-run.
    extra = {o.property.id for o in outcomes if o.property.kind not in FREE}
    assert not extra, extra
    assert {o.property.id for o in outcomes} >= {
        p.id for p in PROPERTIES if p.component == "multi_head" and p.kind == core.Kind.SHAPE
    }


# A loss that computes nothing yet reaches every weight (examples/hostile/constant_loss: 5 + 0 * the real loss)
# and a train that takes no step hold a relation on the student's own loss (Adam's steps on its zero gradients:
# none); a finite loss with NaN gradients and a train that fills the weights with NaN hold it too (NaN matches
# NaN). Neither earns a training step: the first loss must exceed H(q) with a gradient not zero, all finite.
@pytest.mark.parametrize("name", ["constant_loss", "nan_gradient_loss"])
def test_a_loss_with_nothing_to_learn_from_earns_no_step(name, tmp_path):
    from autograder.judge import sample

    student = InProcessStudentCode(sample.make(f"hostile:{name}", tmp_path / name), name)
    passed = {
        o.property.name
        for o in (core.run_property(p, student) for p in PROPERTIES if p.component == "training")
        if o.passed
    }
    assert not passed & {"train_takes_adam_steps_on_the_schedule", "copy_task_is_learned"}


# `return x` placeholders (examples/hostile/returns_its_input): an invariance holds for the identity (odd, rows
# independent, position-wise, causal, blind to padded positions, permutation-equivariant), so the properties
# that compare the student's output with itself also ask that it is not its input where the expected output is
# not. They earned 15 points in six components before (28 November). Noise from the generators the judge seeds
# before every call (examples/hostile/seeded_noise) is the same for two calls on inputs of one shape: the two
# calls of an invariance take two seeds, and the transformer's dropout property asks that with dropout=0 the seed
# changes nothing (it earned 5 points before). AddAndNorm's dropout property is earned
# honestly: with LayerNorm a placeholder, AddAndNorm still computes x + dropout(sublayer_output).
PLACEHOLDERS = ("attention_numpy", "feed_forward", "add_norm", "encoder", "decoder", "multi_head")
HONEST = {"add_and_norm_dropout_acts_in_training"}


@pytest.mark.parametrize(
    "name, components",
    [("returns_its_input", PLACEHOLDERS), ("seeded_noise", (*PLACEHOLDERS, "transformer"))],
)
def test_a_placeholder_earns_only_shape_points(name, components, tmp_path):
    from autograder.judge import sample

    student = InProcessStudentCode(sample.make(f"hostile:{name}", tmp_path / name), name)
    extra = {c: earned(student, c) - HONEST for c in components}
    assert not any(extra.values()), extra
