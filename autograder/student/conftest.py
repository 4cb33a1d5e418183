import sys
from pathlib import Path

# The bundle's root holds the checker package (autograder/) beside exercises/.
sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest_plugins = ["autograder.pytest_plugin"]
