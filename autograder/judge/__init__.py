"""The judge: batch grading in sandboxed worker processes that student code cannot fool, crash or stall.

    grade.py     the orchestrator: plans sections, runs grader processes, writes every output itself
    grader.py    a trusted grading process: runs the properties against a SandboxedStudentCode
    remote.py    SandboxedStudentCode: ships operations to a worker, turns death and silence into StudentErrors
    sandbox.py   the zygote (torch imported once) and the worker it forks: limits, private mounts, no privileges
    wire.py      length-prefixed frames and a pickle that only rebuilds plain data
    feedback.py  feedback.html / feedback.md with the attention heatmaps
    gradescope.py  the Gradescope autograder bundle

See docs/judge.md for the trust model.
"""
