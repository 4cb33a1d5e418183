"""Hidden properties of temperature.softmax_with_temperature (the toy component of docs/extending.md)."""

from __future__ import annotations

import torch
from hypothesis import given

from autograder.properties.temperature import C, softmax_with_temperature
from autograder.suite.checks import close
from autograder.suite.core import prop
from autograder.suite.strategies import tensors


@prop(C, points=1, examples=5, visible=False)
@given(x=tensors((2, 4)))
def temperature_large_flattens_to_uniform(student, x):
    """A temperature of 1e6 gives (nearly) uniform weights: x / T is (nearly) constant along the row."""
    close(
        softmax_with_temperature(student, x, 1e6),
        torch.full_like(x, 1 / x.shape[-1]),
        "softmax_with_temperature(x, 1e6)",
        "divide x by the temperature before exp",
        rtol=1e-4,
        atol=1e-5,
    )
