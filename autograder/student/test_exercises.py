"""Every visible property of the kit, one test each. Run `pytest`, or `pytest -m attention` for one component."""

import pytest

from autograder.pytest_plugin import check_property, properties


@pytest.mark.parametrize("prop", properties())
def test_property(prop, self_check):
    check_property(prop, self_check)
