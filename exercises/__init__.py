"""Your Transformer exercises, one module per component: replace each `raise NotImplementedError` with your code.

Check them with `pytest` (or `python -m autograder check exercises`) from the folder above.
"""
