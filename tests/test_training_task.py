"""The copy task cannot be answered from a file (issue 20, item 4): its permutation of the vocabulary and its
data are drawn on the checking side at grading time, and train's first loss must be the first given batch's.
Weights prepared offline for the task as it used to be (fixed seed, the identity) lose its 3 points
(examples/hostile/copy_offline_weights), even reporting the true first loss."""

from __future__ import annotations

import torch

from autograder import i18n, registry
from autograder.judge import sample
from autograder.properties import training as T
from autograder.student_code import InProcessStudentCode
from autograder.suite import core
from autograder.suite.training_cases import EOS


def test_the_task_is_a_permutation_drawn_from_the_draw():
    task = T.COPY
    a, b = task.mapping(1), task.mapping(2)
    assert not torch.equal(a, b)
    assert torch.equal(a[:3], torch.arange(3)) and sorted(a[3:].tolist()) == list(
        range(3, task.config.tgt_vocab)
    )
    src, tgt = task.data(7, 2, 4, mapping=a)
    assert torch.equal(tgt[..., :-1], a[src]) and bool((tgt[..., -1] == EOS).all())


def test_offline_weights_lose_the_copy_task(tmp_path):
    folder = sample.make("hostile:copy_offline_weights", tmp_path / "h")
    prop = next(p for p in registry.load() if p.name == "copy_task_is_learned")
    with i18n.chosen("en"):
        outcome = core.run_property(prop, InProcessStudentCode(folder, "offline"))
    assert not outcome.passed
    assert "held-out tokens" in outcome.message, outcome.message
