"""The judge: batch grading in sandboxed worker processes that student code cannot fool, crash or stall.

    sections.py         what is graded: a student's sections (one per component, one for integration)
    scheduler.py        the run: farms the class's sections out to grading processes, reuses identical ones
    outputs.py          what is written, from memory: results.json, feedback, logs, gradebook, timing
    grading_process.py  a trusted grading process: runs a section's properties against a SandboxedStudentCode
    remote.py           SandboxedStudentCode: ships operations to a worker, turns death and silence into StudentErrors
    limits.py           Limits: every limit a worker runs under (the CLI's defaults)
    sandbox.py          the zygote (torch imported once) and the worker it forks: limits, private mounts
    frames.py           the length-prefixed frames of every channel (plain pickle between judge processes)
    wire.py             frames over sockets to a worker, with a pickle that only rebuilds plain data
    feedback.py         feedback.html / feedback.md with the attention heatmaps
    gradescope.py       the Gradescope autograder bundle

See docs/judge.md for the trust model.
"""
