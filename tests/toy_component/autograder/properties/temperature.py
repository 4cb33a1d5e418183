"""Properties of temperature.softmax_with_temperature (the toy component of docs/extending.md)."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from ..suite.checks import close, tensor, written_by_hand
from ..suite.core import Kind, prop
from ..suite.strategies import tensors

C = "temperature"


def softmax_with_temperature(student, x, temperature):
    return tensor(
        student.call(C, "softmax_with_temperature", x, temperature),
        f"softmax_with_temperature(x, {temperature})",
        like=x,
    )


@prop(C, points=2, examples=10)
@given(x=tensors((2, 3)), temperature=st.sampled_from([0.5, 1.0, 3.0]))
def temperature_equals_softmax_of_scaled_input(student, x, temperature):
    """softmax_with_temperature(x, T) equals softmax(x / T) along the last dim."""
    close(
        softmax_with_temperature(student, x, temperature),
        torch.softmax(x / temperature, dim=-1),
        f"softmax_with_temperature(x, {temperature})",
        "divide x by the temperature before exp",
    )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def temperature_is_written_by_hand(student):
    """temperature.py calls no library softmax (static check; the run-time check is in every test)."""
    written_by_hand(
        student, C, "write it from exp, max and sum: no torch.softmax or getattr tricks"
    )
