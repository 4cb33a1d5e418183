"""The kit as an nbgrader course: one notebook per component, generated from solutions/ (docs/nbgrader.md).

cells.py    module <-> notebook cells (a component's module = the notebook's solution cells)
course.py   `python -m autograder nbgrader-course DIR`: notebooks and nbgrader_config.py
kernel.py   what the notebooks' read-only cells call in the student's kernel (setup, check)
grading.py  JudgeGrades, the autograde preprocessor that grades through the isolated judge
"""
