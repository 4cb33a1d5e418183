"""The toy component's declaration. tests/test_components.py puts this call at the end of COMPONENTS in a copy
of autograder/components.py, as a new component's author does in the real one (docs/extending.md)."""

from autograder.components import Component

TOY = Component(
    name="temperature",
    title="Softmax with a temperature",
    short="temp",
    summary="softmax with a temperature, by hand (a toy: the worked example of docs/extending.md)",
    deps=(),
    forbidden_families=("softmax",),
    forbidden_names=("softmax",),
    contract="""\
softmax_with_temperature(x, temperature=1.0, dim=-1) -> softmax(x / temperature) along dim, x's shape and dtype
""",
)
