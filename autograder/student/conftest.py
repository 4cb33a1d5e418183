import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# The bundle's root holds the checker package (autograder/) beside exercises/.
sys.path.insert(0, str(ROOT))
pytest_plugins = ["autograder.pytest_plugin"]


def pytest_configure(config):
    # `pytest` from any folder of the bundle (exercises/, notebooks/): pytest finds this folder's settings but
    # would look for tests where it was started; the tests live in tests/.
    source = getattr(config, "args_source", None)  # pytest >= 7.3
    if source is not None and source.name == "INVOCATION_DIR":
        config.args[:] = [str(ROOT / "tests")]
