import sys

from .cli import main

sys.exit(main(process_ends=True))
