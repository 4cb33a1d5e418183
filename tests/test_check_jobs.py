"""The self-check on several cores (`check --jobs N`, autograder/check_jobs.py): the same outcomes, order, blame,
pending points and exit status as in one process; a worker that dies costs only the property it was running."""

import shutil

import pytest

from autograder import KIT, registry
from autograder.bugs import make_submission
from autograder.check import run_suite
from autograder.components import NAMES
from autograder.suite import core
from tests.suite_runs import BUGS

HOSTILE = KIT / "examples" / "hostile"
# Not training: its copy task is the slow tier's (test_the_full_suite_is_the_same_on_two_cores)
FAST = ["attention_numpy", "attention", "mask", "multi_head", "add_norm", "feed_forward", "encoder"]


def seen(outcomes) -> list[tuple]:
    """All a student reads of each outcome, in order."""
    return [
        (o.property.id, str(o.status), o.message, o.hint, o.example, o.detail, o.property.points)
        for o in outcomes
    ]


def both(folder, components, **kw):
    """(one process, two workers): each run's outcomes as read, pending points and dependency sentences."""
    runs = []
    for jobs in (1, 2):
        blocked = {}
        outcomes, pending = run_suite(folder, components, blocked=blocked, jobs=jobs, **kw)
        runs.append((seen(outcomes), pending, blocked))
    return runs


def planted(tmp_path, *names):
    folder = tmp_path / "sub"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in names:
        for f in (HOSTILE / name).glob("*.py"):
            shutil.copy(f, folder / f.name)
    return folder


@pytest.mark.parametrize(
    ("label", "components"),
    [
        ("reference", FAST),
        ("stubs", FAST),
        # a dependency's bug blamed in its dependent; a mask bug; a dependent alone (its dependencies' suites
        # run quietly to explain its failures, in the workers too)
        ("attention:q_k_swapped", ["attention", "multi_head"]),
        ("mask:padding_inverted", ["mask", "attention"]),
        ("encoder:same_layer_n_times", ["encoder"]),
    ],
)
def test_two_workers_give_what_one_process_gives(label, components, tmp_path):
    if label == "reference":
        folder = KIT / "solutions"
    elif label == "stubs":
        folder = KIT / "exercises"
    else:
        folder = make_submission(BUGS[label], KIT / "solutions", tmp_path / "sub")
    one, two = both(folder, components)
    assert two == one
    outcomes = one[0]
    if label == "reference":
        assert all(status == "passed" for _, status, *_ in outcomes)
    else:
        assert any(status != "passed" for _, status, *_ in outcomes)


def test_the_full_suite_is_the_same_on_two_cores():
    """The reference, every component, visible and hidden (the slow tier: training's copy task)."""
    one, two = both(KIT / "solutions", None)
    assert two == one
    assert {pid.split("::")[0] for pid, *_ in one[0]} == set(NAMES)


# An endless loop in Transformer.__init__, which transformer's, kv_cache's and beam_search's properties call
LOOP_IN_INIT = (
    "transformer",
    "        self.src_embedding = TokenEmbedding(src_vocab_size, d_model)",
    "        while True:\n            pass",
)


@pytest.mark.usefixtures("settled_heap")
def test_a_loop_found_in_one_worker_is_known_to_the_others(tmp_path):
    """The loop times out once, in transformer's worker; kv_cache's properties, run at the same time in the
    other worker, timed out afresh there: each is run again in the parent, which knows the loop, so they say
    "already timed out once", as in one process."""
    folder = planted(tmp_path)
    component, old, new = LOOP_IN_INIT
    path = folder / f"{component}.py"
    assert path.read_text().count(old) == 1
    path.write_text(path.read_text().replace(old, new))
    one, two = both(folder, ["transformer", "kv_cache"], timeout=0.3)
    assert two == one
    own = [(pid, message) for pid, _, message, *_ in one[0] if "::integration::" not in pid]
    fresh = [pid for pid, message in own if "timed out after 0.3 s" in message]
    known = [pid for pid, message in own if "already timed out once" in message]
    assert len(fresh) == 1 and fresh[0].startswith("transformer::"), fresh
    assert any(pid.startswith("kv_cache::") for pid in known), known


def test_a_worker_that_dies_costs_only_the_properties_it_was_running(tmp_path):
    """os._exit inside MultiHeadAttention.forward: in one process the whole check would end; on two cores
    each property that calls it is `crashed`, saying how its process ended, and every other runs as usual."""
    folder = planted(tmp_path, "os_exit_in_forward")
    outcomes, _ = run_suite(folder, ["attention", "multi_head", "mask"], jobs=2)
    reference, _ = run_suite(KIT / "solutions", ["attention", "multi_head", "mask"], jobs=1)
    crashed = [o for o in outcomes if o.status == core.Status.CRASHED]
    assert crashed and all(o.property.component == "multi_head" for o in crashed)
    assert all("its process exited (status 0)" in o.message for o in crashed), crashed[0].message
    # a property that never calls forward (the static scan, the constructor's) still ran and passed
    assert any(o.passed for o in outcomes if o.property.component == "multi_head")
    others = [o for o in outcomes if o.property.component != "multi_head"]
    assert seen(others) == seen(r for r in reference if r.property.component != "multi_head")


def test_a_worker_gone_between_two_tasks_is_replaced(tmp_path):
    """A worker that ended while idle (a thread of the student's code may end its process after a property
    returned): the next task goes to a fresh worker, not into a closed pipe."""
    import os
    import signal
    import time

    from autograder.check import SelfCheck

    props = registry.load(include_hidden=False, components=["mask"])
    session = SelfCheck(KIT / "solutions")
    try:
        session.start(props[:2], 2)
        assert [session.run(p).status for p in props[:2]] == ["passed", "passed"]
        for worker in session.jobs.workers.values():
            os.kill(worker.pid, signal.SIGKILL)
        for (
            worker
        ) in session.jobs.workers.values():  # dead (a zombie, its pipes closed), not reaped
            while open(f"/proc/{worker.pid}/stat").read().split(")")[1].split()[0] != "Z":
                time.sleep(0.01)
        session.jobs.submit(props[2:4])
        assert [session.run(p).status for p in props[2:4]] == ["passed", "passed"]
    finally:
        session.close()
