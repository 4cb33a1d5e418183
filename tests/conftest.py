"""The kit's tests: shared setup, and the slow tier.

`pytest -m "not slow"` is the edit loop's tier (115-166 s on two workers on the 2-core machine of 29
November, run to run; 161 s on 28 November, before the checking side's stacks stopped deep-copying a layer);
`pytest`, as CI runs it, is everything (docs/speed.md, "The kit's own tests").
A test is slow when it grades a class with the judge, runs nbgrader, or runs a student bundle's own pytest or
check in a fresh process.
The slow ones are named here, in one place, so that no test body carries a decorator; a name here that no
longer matches a test or a fixture is an error, so a renamed slow test cannot drift into the fast tier.
"""

import gc
import os
import re
import sys

import pytest

from autograder import KIT as ROOT
from autograder.components import NAMES

# `tests.<module>` importable: a worker script imports test helpers by that name
sys.path.insert(0, str(ROOT))

# Module fixtures that grade a class with the judge (or through nbgrader) once for their module: every test
# that uses one is slow, new ones included. Seconds: CPU time in one run on the 2-core machine (children
# included), the figures that ranked the tests.
SLOW_FIXTURES = {
    "test_judge.py": {"runs"},  # 38 s, and 24 s for the tests that grade again
    # 30 s; 160 s on the loaded 2-core machine with issue 20's examples
    "test_judge_byhand.py": {"graded"},
    "test_judge_hostile.py": {"graded"},  # 245 s
    "test_judge_i18n.py": {"graded"},  # a class of five graded twice, in Spanish and in English
    "test_judge_isolation.py": {"graded", "user_dir"},  # 24 s; 26 and 28 s for the two as a user
    "test_judge_trust.py": {"graded"},  # 78 s
    "test_judge_faults.py": {"graded"},  # ~90 s wall: a reference, eight small students, then alone
    "test_nbgrader.py": {"graded"},  # 130 s
    "test_free_points.py": {"judged"},  # 12 s
    "test_report.py": {"built"},  # 5 s: a synthetic class of 14 and its report
    "test_report_browser.py": {"page"},  # 16 s: a class of 12, its report, chromium's start
    # 300 s on the loaded 2-core machine: 17 hostile names (two with the reference), graded and reported
    "test_judge_names.py": {"graded"},
    # a zipped Canvas download and a Moodle one, each with its roster: two small classes graded
    "test_lms_roundtrip.py": {"graded"},
    # a class of four graded once, as three shards and as two Slurm shards
    "test_shards.py": {"single"},
    "test_bundle_clauses.py": {"checked"},  # ~40 s: a bundle built, then three `check` runs in it
}

# Slow tests that use no such fixture: each grades, or runs pytest, check or a kernel in a fresh process.
SLOW_TESTS = {
    "test_judge_gradescope.py": {"test_run_autograder_on_a_simulated_tree"},  # 10 s
    "test_judge_isolation.py": {  # 16, 8 and 23 s
        "test_a_slow_but_correct_loop_gets_the_same_score_from_check_and_grade",
        "test_a_loop_too_slow_fails_the_self_check_first_with_the_same_verdict",
        "test_a_slow_loop_gets_the_same_score_from_nbgrader",
    },
    "test_nbgrader.py": {  # 3 s, a kernel start; 22 s, a Spanish course autograded in kernel mode
        "test_a_students_kernel_checks_what_was_run",
        "test_a_spanish_course_grades_in_spanish",
    },
    # 25-60 s each: a fresh process calls every fitting function of a checker on every exercise's inputs
    "test_bundle_answers.py": {
        "test_the_probe_finds_the_graded_sides_answers",
        "test_no_shipped_function_computes_an_exercise",
        "test_the_bundle_still_names_the_bug",  # 11 bugs, ~2 s each
    },
    # 30-50 s: a kit copy, stubs, check
    "test_components.py": {"test_a_new_component_needs_only_its_own_files"},
    # 120 s: every component's suite on every bug, in English and in marked Spanish
    "test_i18n_suite.py": {"test_every_word_is_translated_and_the_grade_is_the_same"},
    "test_i18n.py": {  # fresh check / bundle processes
        "test_check_lang_es_on_the_stubs_prints_a_spanish_table",
        "test_a_spanish_bundle_speaks_spanish_by_default_and_english_when_asked",
    },
    "test_kv_cache_behaviour.py": {  # 8 s of CPU together: six kv_cache sections in-process
        "test_no_cache_loses_the_behaviour_points_however_hidden",
        "test_the_same_decoder_in_plain_sight_gets_13",
    },
    "test_training_task.py": {"test_offline_weights_lose_the_copy_task"},  # 7 s: one copy task
    "test_hints.py": {"test_grade_charges_a_loop_as_check_does"},  # 16 s: a class of one graded
    # issue 34: a whole component's visible suite each, seven components (~35 s of CPU together)
    "test_hints_evidence.py": {
        "test_the_table_shows_the_true_hint_and_no_hint_names_a_wrong_cause"
    },
    "test_selfcheck_verdicts.py": {  # 13, 2 and 3 s
        "test_grade_keeps_downstream_full_marks_and_only_integration_drops",
        "test_check_names_it_in_the_table_and_json_and_runs_the_dependency_quietly",
        "test_pytest_names_it_for_one_selected_component",
    },
    # issue 21: 55 s of CPU for the seven bug cases' suites; the judge on two folders and their checks; a bundle's
    # pytest
    "test_no_double_jeopardy.py": {
        "test_check_charges_only_the_component_where_the_bug_lives",
        "test_check_stays_within_grade_and_pending",
        "test_the_bundle_pytest_shows_a_blocked_component_as_pending",
        "test_a_notebook_check_cell_without_the_reference_shows_the_same_pending",  # 1 to 5 s: a kernel's check
    },
    # 25 s of CPU: check, a class of one graded, a bundle's pytest and a kernel's check cell on one submission
    "test_same_words.py": {"test_check_pytest_grade_and_a_notebook_cell_give_the_same_hint"},
    # 5 and 7 s: the by-hand guard attacked in a fresh process (issue 20)
    "test_rules_guard.py": {"test_emptying_the_guards_closures_switches_nothing_off"},
    "test_rules_suite.py": {"test_switching_the_rules_off_from_a_helper_earns_nothing_in_process"},
    # 10 s: the beam_search suite on a hostile submission and its control
    "test_beam_search.py": {
        "test_greedy_unless_the_beam_is_enumerable_earns_what_plain_greedy_earns"
    },
    # the reference's whole suite, visible and hidden, twice: in one process and on two workers
    "test_check_jobs.py": {"test_the_full_suite_is_the_same_on_two_cores"},
    "test_stubs_and_release.py": {  # 2 to 6 s each, 23 s together
        "test_bundle_check_exits_0_at_full_marks_with_points_pending_and_the_totals_add_up",
        "test_bundle_check_command_works_without_the_instructor_tools",
        "test_bundle_pytest_on_stubs_reports_zero",
        "test_bundle_pytest_from_exercises_on_stubs_is_a_screenful_per_component_and_ends_with_the_table",
        "test_bundle_grades_the_notebooks_and_names_the_cell",
        "test_bundle_pytest_on_reference_passes_and_says_hidden_points_remain",
        "test_bundle_notebook_runs_in_a_kernel_and_a_failure_names_the_cell",
    },
}


# Parametrized tests that are slow for one parameter: in the modules that run a component's whole suite, those whose
# parameter is a component (its name, or one of its bugs) holding a property declared slow (`@prop(..., slow=True)`:
# training's copy task trains a model: about 3 s per run when this rule was made, 15 such tests, 45 s of the fast
# tier's 140 s then; 0.4 s since issue 24 resized the task, twice for a model that falls short).
# A new slow component needs no edit here.
SUITE_MODULES = {"test_suite_meta.py", "test_free_points.py"}
_slow_components: set[str] | None = None


def _slow_parameter(item) -> bool:
    global _slow_components
    callspec = getattr(item, "callspec", None)
    if not callspec or item.path.name not in SUITE_MODULES:
        return False
    if _slow_components is None:
        from autograder import registry

        _slow_components = {p.component for p in registry.load(include_hidden=True) if p.slow}
    for value in callspec.params.values():
        component = value if isinstance(value, str) else getattr(value, "component", None)
        if component in _slow_components:
            return True
    return False


def _check_names():
    """Every name in SLOW_FIXTURES and SLOW_TESTS is defined in its module."""
    for table in (SLOW_FIXTURES, SLOW_TESTS):
        for module, names in table.items():
            path = ROOT / "tests" / module
            # tests/test_components.py's toy
            if not path.exists() and os.environ.get("KIT_PARTIAL_COPY"):
                continue
            source = path.read_text()
            for name in names:
                if not re.search(rf"^def {name}\(", source, re.MULTILINE):
                    raise pytest.UsageError(
                        f"tests/conftest.py names {module}::{name}, which is not defined there"
                    )


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config, items):
    _check_names()
    for item in items:
        module = item.path.name
        fixtures = SLOW_FIXTURES.get(module, set()) & set(getattr(item, "fixturenames", ()))
        named = getattr(item, "originalname", item.name) in SLOW_TESTS.get(module, ())
        slow = bool(fixtures or named or _slow_parameter(item))
        if slow:
            item.add_marker(pytest.mark.slow)
        group = _worker_group(item, bool(fixtures), slow)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # in an xdist worker, `--dist loadgroup`
                _carry_group(item, group)


def _carry_group(item, group: str) -> None:
    """Give the controller the item's group in its node id, "<id>@<group>", which is how xdist 3.8 carries it.

    xdist writes the suffix to `item._nodeid`, which pytest 9.2 no longer reads (it keeps a structured `_id`):
    the groups were silently ignored, every test went to whichever worker was free, and a module fixture was set up
    once per worker (the hostile class graded twice: pytest-dev/pytest-xdist#1386). Where `_id` exists, the id is
    written there; tests/test_worker_groups.py fails when a group is split over two workers again."""
    node_id = getattr(item, "_id", None)
    if node_id is not None and "@" not in str(node_id).rpartition("]")[2]:
        item._id = type(node_id).parse(f"{node_id}@{group}")


# The tests run on the machine's cores (pytest-xdist, `-n auto --dist loadgroup` in pyproject.toml; `-n 0` for a
# breakpoint). Tests of one group go to one worker; xdist hands out the groups with the most tests first:
# - the class gradings (the tests of SLOW_FIXTURES) are one group, one after another on one worker: each grades
#   with two processes of its own, and two of them side by side each took twice as long (with no group, the
#   hostile class's grading took 519 s beside another class, and the whole suite 1,613 s of wall time);
# - the other slow tests (a bundle's pytest, a fresh `check`, a component's suite in two languages: one process
#   each) are a group per module, so that a module fixture is built once, and run on the other worker beside the
#   fast tier. With the whole slow tier one group (the intent before 28 November, never in effect: see
#   _carry_group), the other worker would sit idle for most of the run: the slow tier alone takes 1,190 s of
#   wall time for 1,674 s of CPU in one process (docs/speed.md);
# - the tests that run a component's whole suite per parameter (SUITE_MODULES, and the Spanish suite) are a group
#   per component: tests/suite_runs.py caches its English runs per process, and the same run on two workers was
#   computed twice (test_suite_meta.py: 83 s of CPU in one process, 122 s on two workers; test_i18n_suite.py
#   reads the same runs: on another worker it computed them all again).
def _worker_group(item, grades_a_class: bool, slow: bool) -> str | None:
    if grades_a_class:
        return "class-gradings"
    callspec = getattr(item, "callspec", None)
    if callspec and item.path.name in SUITE_MODULES | {"test_i18n_suite.py"}:
        for value in callspec.params.values():
            component = value if value in NAMES else getattr(value, "component", None)
            if component:
                return f"component:{component}"
    return f"slow:{item.path.name}" if slow else None


@pytest.fixture
def settled_heap():
    """For a test of an in-process time limit of a fraction of a second: the process's heap collected, then
    frozen for the test. A full collection is charged to whichever call it interrupts, and it grows with the
    heap: in a process that has run 60 of the catalog's bugs (tests/suite_runs.py caches their outcomes) one took
    0.14 s of CPU, and on a worker of the whole run a 0.3 s limit once fired in a LayerNorm call that loops
    nowhere (a student's `check` holds no such heap)."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
