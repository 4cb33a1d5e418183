"""The judge: batch grading in sandboxed worker processes that student code cannot fool, crash or stall.

    sections.py         what is graded: a student's sections (one per component, one for integration)
    scheduler.py        the run: farms the class's sections out to grading processes, reuses identical ones
    outputs.py          what is written, from memory: results.json, feedback, logs, gradebook, timing
    reaper.py           the orchestrator as subreaper: ends whatever a run leaves behind
    grading_process.py  a trusted grading process: runs a section's properties against a SandboxedStudentCode
    package_folder.py   a slot's package folder: the section's files compiled once, the reference as bytecode
    remote.py           SandboxedStudentCode: ships operations to a worker, turns death and silence into StudentErrors
    operations.py       the judge's own operations (Import, Bye) and how messages name an operation
    replies.py          a worker's reply judged: its types, its error rebuilt and checked, its death worded
    zygote_client.py    the grading process's end of its zygote: the fixed environment, the run's uids
    limits.py           Limits: every limit a worker runs under (the CLI's defaults)
    zygote.py           the zygote: torch imported once, the next worker forked ahead of time
    sandbox.py          a worker's confinement: namespaces, private mounts, rlimits, its own uid, seccomp
    worker.py           a worker: set up in the sandbox, then serves operations with the kit's Executor
    frames.py           the length-prefixed frames of every channel (plain pickle between judge processes)
    wire.py             frames over sockets to a worker, with a pickle that only rebuilds plain data
    pickle_scan.py      a worker's frame scanned before it is loaded: what it would build, against the caps
    feedback.py         feedback.html / feedback.md with the attention heatmaps
    gradescope.py       the Gradescope autograder bundle

See docs/judge.md for the trust model.
"""
