"""No free points (issue 11, item 7): code that computes nothing earns only the shape properties.

A submission that returns zeros, or NaN, of the right shape from every function and forward (generated here: the
reference with every returned tensor or array replaced) must fail every property that checks a value. NaN never
passes a comparison unless the expected value is NaN there, and every invariance (the student's output compared
with itself) also checks that the output is not a constant where the expected output is not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from autograder import KIT
from autograder.components import NAMES
from autograder.properties import core
from autograder.student_code.executor import InProcessStudentCode
from autograder.student_code.interface import Call, Inspect, StudentCode

PROPERTIES = core.load(include_hidden=True)

# What constant output may earn: properties about structure and shapes alone (names of parameters, shapes and
# dtypes of outputs, ValueError for a bad head count, the device argument), and the static by-hand checks (issue
# 11 item 8 ties those to a behavioural property in the scoring, not in the property).
SHAPE_PROPERTIES = {
    "attention_numpy": {"np_attention_shapes_and_dtype"},
    "attention": {"attention_shapes_for_cross_attention", "softmax_keeps_shape"},
    "mask": {
        "causal_mask_shape_and_dtype",
        "causal_mask_accepts_device",
        "padding_mask_shape_and_dtype",
    },
    "positional_encoding": {
        "sinusoidal_shape_and_default_dtype",
        "positional_encoding_default_max_len",
    },
    "multi_head": {
        "multi_head_parameters_are_named",
        "multi_head_cross_attention_shape",
        "multi_head_bad_head_count_raises_value_error",
    },
    "add_norm": {"layer_norm_init_weight_ones_bias_zeros"},
    "feed_forward": {"feed_forward_parameters"},
    "encoder": {"encoder_submodules_are_named", "encoder_stack_has_n_distinct_layers"},
    "decoder": {
        "decoder_submodules_are_named",
        "decoder_stack_has_n_distinct_layers",
        "decoder_layer_output_shape",
    },
    "transformer": {"transformer_submodules_are_named", "transformer_logits_shape"},
    "kv_cache": set(),
    "beam_search": set(),
    # the return types alone (float64 losses, a float learning rate...): what a type check can earn
    "training": {"training_returns_the_contract_types"},
}


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
    """The reference's modules (so shapes and parameter names are right), but every function, forward and
    gradient gives `fill`, and so does every buffer (a table the code would have computed)."""

    def __init__(self, fill: float):
        self.inner, self.fill = InProcessStudentCode(KIT / "solutions", "reference"), fill
        self.label = f"computes-nothing-{fill}"

    def run(self, op):
        reply = self.inner.run(op)
        if isinstance(op, Call):
            reply.value = constant_like(reply.value, self.fill)
            reply.attrs = constant_like(reply.attrs, self.fill)
            reply.input_grads = constant_like(reply.input_grads, self.fill)
            reply.param_grads = constant_like(reply.param_grads, self.fill)
        elif isinstance(op, Inspect) and isinstance(reply.value, dict) and "state" in reply.value:
            params = set(reply.value["params"])
            reply.value["state"] = {
                k: v if k in params else constant_like(v, self.fill)
                for k, v in reply.value["state"].items()
            }
        return reply


def earned(student, component):
    return {
        o.property.name
        for o in (core.run_property(p, student) for p in PROPERTIES if p.component == component)
        if o.passed and not o.property.name.endswith("_is_written_by_hand")
    }


@pytest.mark.parametrize("fill", [0.0, math.nan], ids=["zeros", "nan"])
@pytest.mark.parametrize("component", NAMES)
def test_constant_output_earns_only_shape_points(component, fill):
    # A component with no entry (a new one) may earn nothing at all from constant output: the strictest rule.
    extra = earned(ComputesNothing(fill), component) - SHAPE_PROPERTIES.get(component, set())
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
        Options(jobs=2, limits=Limits(op_timeout=3, section_timeout=30, memory_mb=1024)),
    )


@pytest.mark.parametrize("student", ["zeros", "nan"])
def test_judge_gives_computing_nothing_only_shape_points(judged, student):
    outcomes = [
        o for o in judged[student].outcomes if o.property.component in ATTACKED and o.passed
    ]
    # Integration re-runs (the dependent component's first properties with the student's files) are named
    # "integration::<property>": judged by the property they re-run.
    names = {o.property.id: o.property.name.removeprefix("integration::") for o in outcomes}
    extra = {
        pid
        for pid, name in names.items()
        if name not in SHAPE_PROPERTIES[pid.split("::")[0]]
        and not name.endswith("_is_written_by_hand")
    }
    assert not extra, extra
    assert {o.property.id for o in outcomes} >= {
        f"multi_head::{n}" for n in SHAPE_PROPERTIES["multi_head"]
    }
