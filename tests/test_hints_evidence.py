"""A hint names a cause only where the student's own output shows it (issue 34): each untrue hint of the issue,
planted as the realistic mistake that drew it, no longer fires, and the hint of the real mistake (tested directly
on the student's code) does. Run as the kit runs them and as the student bundle does (no diagnoses), where the
issue found it there.

Each case runs one property in-process (a fraction of a second each)."""

from __future__ import annotations

import sys

import pytest

from autograder import registry
from autograder.suite import core
from tests.test_hints import lang, outcome, planted  # noqa: F401  (lang: a fixture)


def without_diagnoses(monkeypatch, component: str) -> None:
    """The component's property modules as the student bundle runs them: no graded-side mistake models."""
    modules = {
        sys.modules[p.fn.__module__]
        for p in registry.load(include_hidden=False)
        if p.component == component
    }
    # and the suite's modules that the properties draw their shared helpers from (suite/heads.py, ...): each
    # binds the mistake models it uses itself
    modules |= {m for name, m in sys.modules.items() if name.startswith("autograder.suite.")}
    for module in modules:
        for attr in ("mistake_models", "MISTAKE_MODELS"):
            if hasattr(module, attr):
                monkeypatch.setattr(module, attr, None)


ENCODER_INPUT_KEPT = (
    "encoder",
    "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n"
    "        return self.add_norm_2(x, self.feed_forward(x))",
    "        x0 = x\n"
    "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n"
    "        return self.add_norm_2(x0, self.feed_forward(x))",
)

# name: (edits, property, bundle?, the untrue hint's words (en, es), the true hint's words (en, es) or None)
CASES = {
    "dropout_scaled_in_eval": (
        [
            (
                "multi_head",
                "heads = self.dropout(weights) @ v",
                "heads = (weights * (1 - self.dropout.p)) @ v",
            )
        ],
        "multi_head::multi_head_dropout_is_off_in_eval",
        True,
        ("inverted mask", "máscara invertida"),
        ("built with dropout=0", "dropout=0"),
    ),
    "eps_outside_the_root": (
        [("add_norm", "torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)")],
        "add_norm::layer_norm_eps_inside_the_square_root",
        False,
        ("eps = 3.2e-8", "eps = 3.2e-8"),
        ("eps goes inside the square root", "eps va dentro de la raíz"),
    ),
    "scaled_by_d_v": (
        [("attention", "/ math.sqrt(d_k)", "/ math.sqrt(value.shape[-1])")],
        "attention::attention_equals_torch",
        False,
        ("no scaling", "falta el escalado"),
        ("sqrt(d_v)", "sqrt(d_v)"),
    ),
    "residual_adds_the_layer_input": (
        [ENCODER_INPUT_KEPT],
        "encoder::encoder_layer_post_norm_closed_form",
        False,
        ("self-attention sub-layer is skipped", "se omite la subcapa"),
        ("the second residual adds the layer's input", "el segundo residual suma"),
    ),
    "shift_right_shifts_left": (
        [
            (
                "training",
                "return torch.cat([bos, tgt[:, :-1]], dim=1)",
                "return torch.cat([tgt[:, 1:], bos], dim=1)",
            )
        ],
        "training::teacher_forcing_gradient_equals_expected",
        False,
        ("no causal mask", "no hay máscara causal"),
        ("shift_right([[4, 5, 6]], 1)", "shift_right([[4, 5, 6]], 1)"),
    ),
    "scores_multiplied_by_the_mask": (
        [
            (
                "attention",
                'scores = scores.masked_fill(~mask, float("-inf"))',
                "scores = scores * mask",
            )
        ],
        "attention::attention_fully_masked_rows_are_zero",
        False,
        ("-1e9", "-1e9"),
        ("multiplied by the mask", "se multiplican por la máscara"),
    ),
    "every_beam_starts_at_zero": (
        [("beam_search", "logp[:, 0] = 0.0", "logp[:, :] = 0.0")],
        "beam_search::beam_search_finds_best_by_enumeration",
        True,
        (
            "the best hypotheses by enumeration",
            "las mejores hipótesis",
        ),  # only in the message, never the hint
        ("exactly what it returns with beam_size=1", "beam_size=1"),
    ),
    "heads_split_without_transpose": (
        [
            (
                "multi_head",
                "q = self.w_q(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)",
                "q = self.w_q(query).view(batch, self.num_heads, m_q, self.d_k)",
            ),
            (
                "multi_head",
                "k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)",
                "k = self.w_k(key).view(batch, self.num_heads, m_k, self.d_k)",
            ),
            (
                "multi_head",
                "v = self.w_v(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)",
                "v = self.w_v(value).view(batch, self.num_heads, m_k, self.d_k)",
            ),
        ],
        "multi_head::multi_head_equals_torch",
        True,
        ("inverted mask", "máscara invertida"),
        ("mixes positions", "mezcla posiciones"),
    ),
    "output_rounded": (
        [
            (
                "attention_numpy",
                "return weights @ v, weights",
                "return np.around(weights @ v, 2), weights",
            )
        ],
        "attention_numpy::np_attention_equals_expected",
        False,
        ("weights are right", "los pesos son correctos"),
        ("rounded to 2 decimals", "redondeado a 2 decimales"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_untrue_hint_no_longer_fires_and_the_true_one_does(tmp_path, lang, monkeypatch, case):  # noqa: F811
    edits, pid, bundle, untrue, true = CASES[case]
    if bundle:
        without_diagnoses(monkeypatch, pid.split("::")[0])
    o = outcome(planted(tmp_path, *edits), pid)
    assert o.status == "failed", (o.status, o.message)
    index = 0 if lang == "en" else 1
    assert untrue[index].lower() not in o.hint.lower(), o.hint
    assert true[index].lower() in o.hint.lower(), o.hint


def test_a_skipped_self_attention_is_still_named(tmp_path, lang):  # noqa: F811
    """The direct test behind the residual case keeps the true hint where the sub-layer is skipped."""
    folder = planted(
        tmp_path,
        (
            "encoder",
            "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n",
            "",
        ),
    )
    o = outcome(folder, "encoder::encoder_layer_post_norm_closed_form")
    assert o.status == "failed"
    words = (
        "self-attention sub-layer is skipped"
        if lang == "en"
        else "se omite la subcapa de autoatención"
    )
    assert words in o.hint, o.hint


def test_two_mistakes_that_fit_one_number_name_neither():
    from autograder.suite.checks import nearest

    assert nearest(0.5, "default", (0.50001, "a"), (0.50002, "b")) == "default"
    assert nearest(0.5, "default", (0.50001, "a"), (0.7, "b")) == "a"
    assert nearest(0.5, "default", (0.6, "a")) == "default"


# ------------------------------------------------------------------------------ errors explained
# name: (edit, property, the hint's words (en, es)): the library's text kept, the usual cause named, in its file
LIBRARY_ERRORS = {
    "view_after_transpose": (
        ("multi_head", "heads.transpose(1, 2).contiguous().view(", "heads.transpose(1, 2).view("),
        "multi_head::multi_head_equals_torch",
        "view size is not compatible",
        (
            "in multi_head.py: `.view` needs a contiguous tensor",
            "en multi_head.py: `.view` necesita",
        ),
    ),
    "numpy_mean_without_keepdims": (
        (
            "attention_numpy",
            "    mean = np.mean(x, axis=-1, keepdims=True)",
            "    mean = np.mean(x, axis=-1)",
        ),
        "attention_numpy::np_layer_norm_equals_expected",
        "could not be broadcast",
        ("in attention_numpy.py: shapes", "en attention_numpy.py: las formas"),
    ),
    "numpy_axis_from_the_front": (
        (
            "attention_numpy",
            "    mean = np.mean(x, axis=-1, keepdims=True)",
            "    mean = np.mean(x, axis=2, keepdims=True)",
        ),
        "attention_numpy::np_layer_norm_equals_expected",
        "out of bounds",
        ("axis 2 counts from the front", "el eje 2 se cuenta desde el principio"),
    ),
    "torch_mean_without_keepdim": (
        ("add_norm", "mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=-1)"),
        "add_norm::layer_norm_equals_torch",
        "must match the size",
        ("in add_norm.py: this line uses a reduction", "en add_norm.py: esta línea usa"),
    ),
}


@pytest.mark.parametrize("case", LIBRARY_ERRORS)
def test_a_library_error_keeps_its_text_and_names_the_usual_mistake(tmp_path, lang, case):  # noqa: F811
    edit, pid, text, words = LIBRARY_ERRORS[case]
    o = outcome(planted(tmp_path, edit), pid)
    assert o.status == "error", (o.status, o.message)
    assert text in o.message
    assert words[0 if lang == "en" else 1] in o.hint, o.hint
    assert "a shape error" not in o.hint and "error de forma" not in o.hint


def test_a_broadcast_error_of_other_shapes_names_no_keepdims():
    from autograder.suite.error_hints import library_error

    detail = "  attention_numpy.py, line 3, in f\n    return a + b"
    text = "operands could not be broadcast together with shapes (2,4) (3,)"
    assert library_error("ValueError", text, detail) == ""
    assert library_error("ValueError", text.replace("(3,)", "(2,)"), detail)
    assert (
        library_error("ValueError", text.replace("(3,)", "(2,)"), "") == ""
    )  # no file of the student's


# ------------------------------------------------------------------------------ one true hint first
def _failure(name: str, hint: str, evidence) -> core.Outcome:
    p = core.Property(name, "attention", 1.0, True, 1, fn=lambda: None)
    return core.Outcome(p, core.Status.FAILED, "wrong", hint, evidence=int(evidence))


def test_the_table_shows_the_hint_with_the_strongest_evidence_and_drops_a_weaker_contradiction():
    from autograder import passes, results

    E = core.Evidence
    outcomes = [
        _failure("a_recipe", "the recipe", E.NONE),
        _failure("a_model", "no scaling", E.MODEL),
        _failure("a_direct_test", "scaled by sqrt(d_v)", E.DIRECT),
        _failure("another_recipe", "the recipe again", E.NONE),
    ]
    outcomes = passes.rank(outcomes)
    row = results.summarize(outcomes, components=["attention"])[0]
    assert row.first_failure.property.name == "a_direct_test"
    assert "no scaling" not in outcomes[1].hint and "a_direct_test" in outcomes[1].hint
    assert "scaled by sqrt(d_v)" in outcomes[1].hint
    assert (
        outcomes[0].hint == "the recipe" and outcomes[3].hint == "the recipe again"
    )  # no cause: kept


def test_a_direct_hint_overrides_no_hint_of_another_file():
    from autograder import passes

    E = core.Evidence
    other = _failure("elsewhere", "no scaling", E.MODEL)
    other.property = core.Property("elsewhere", "multi_head", 1.0, True, 1, fn=lambda: None)
    outcomes = passes.rank([_failure("direct", "scaled by sqrt(d_v)", E.DIRECT), other])
    assert outcomes[1].hint == "no scaling"


def test_without_evidence_the_table_shows_the_first_failure_as_before():
    from autograder import passes, results

    E = core.Evidence
    outcomes = passes.rank([_failure("first", "x", E.NONE), _failure("second", "y", E.MODEL)])
    assert (
        results.summarize(outcomes, components=["attention"])[0].first_failure.property.name
        == "second"
    )
    outcomes = passes.rank([_failure("first", "x", E.MODEL), _failure("second", "y", E.MODEL)])
    assert outcomes[1].hint == "y"  # two models, neither tested directly: both stand
    assert (
        results.summarize(outcomes, components=["attention"])[0].first_failure.property.name
        == "first"
    )


def test_a_diagnosis_says_how_it_knows():
    from autograder.suite.checks import diagnose, named

    E = core.Evidence
    assert diagnose("default", (False, "a")) == "default"
    assert diagnose("default", (True, "a")).evidence == E.MODEL
    assert diagnose("default", (True, "a", E.DIRECT)).evidence == E.DIRECT
    assert diagnose("default", (True, lambda: named("b", E.DIRECT))).evidence == E.DIRECT
    o = outcome_of_failure(diagnose("default", (True, "a", E.DIRECT)))
    assert o.evidence == E.DIRECT


def outcome_of_failure(hint):
    def fn():
        raise core.Failure("wrong", hint)

    p = core.Property("p", "attention", 1.0, True, 1, fn=fn)
    return core._outcome_from(p, core.Failure("wrong", hint))


# ------------------------------------------------------------------------------ the table's hint, per component
# name: (edits, component, the untrue hint's words or None, the table's true hint's words); as the bundle runs
# them (no diagnoses), English (the catalogs' tests check the Spanish of every message)
TABLE_CASES = {
    "unbiased_variance": (
        [
            (
                "add_norm",
                "var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)",
                "var = x.var(dim=-1, keepdim=True)",
            )
        ],
        "add_norm",
        "is not the contract's",
        "unbiased variance",
    ),
    "key_view_as_transpose": (
        [
            (
                "attention",
                "query @ key.transpose(-2, -1)",
                "query @ key.view(*key.shape[:-2], key.size(-1), key.size(-2))",
            )
        ],
        "attention",
        None,
        "a view is not a transpose",
    ),
    "sin_cos_halves": (
        [
            (
                "positional_encoding",
                "pe[:, 0::2] = torch.sin(angle)",
                "pe[:, : (d_model + 1) // 2] = torch.sin(angle)",
            ),
            (
                "positional_encoding",
                "pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])",
                "pe[:, (d_model + 1) // 2 :] = torch.cos(angle[:, : d_model // 2])",
            ),
        ],
        "positional_encoding",
        None,
        "[sin | cos]",
    ),
    "step_mask_off_by_one": (
        [
            (
                "kv_cache",
                "causal_mask(t + n, device=tokens.device)[t:]",
                "torch.ones(n, t + n, dtype=torch.bool, device=tokens.device).tril(t - 1)",
            )
        ],
        "kv_cache",
        None,
        "off by one",
    ),
    "no_memory_mask": (
        [("kv_cache", "self.memory_mask))", "None))")],
        "kv_cache",
        None,
        "the cross-attention ignores the source padding",
    ),
    "mean_over_padding": (
        [
            (
                "training",
                "return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)",
                "return per_position.mean()",
            )
        ],
        "training",
        "underflows",
        "padding positions count",
    ),
    "smoothing_over_v_minus_1_padding_included": (
        [
            ("training", "smoothing / (logits.size(-1) - 2)", "smoothing / (logits.size(-1) - 1)"),
            ("training", "    true_dist[..., pad_id] = 0.0\n", ""),
        ],
        "training",
        "underflows",
        "smoothing / (V - 1)",
    ),
}


@pytest.mark.parametrize("case", TABLE_CASES)
def test_the_table_shows_the_true_hint_and_no_hint_names_a_wrong_cause(tmp_path, monkeypatch, case):
    from autograder import i18n, passes, results
    from autograder.student_code import InProcessStudentCode, StopsAtLoops

    edits, component, untrue, true = TABLE_CASES[case]
    without_diagnoses(monkeypatch, component)
    student = StopsAtLoops(InProcessStudentCode(planted(tmp_path, *edits)))
    mine = [
        p for p in registry.load(include_hidden=False) if p.component == component and not p.slow
    ]
    with i18n.chosen("en"):
        outcomes = passes.finish([passes.made(core.run_property(p, student)) for p in mine])
    hints = [o.hint for o in outcomes if not o.passed]
    assert hints, "the mistake is caught"
    assert untrue is None or not [h for h in hints if untrue in h], hints
    assert true in results.strongest_failure(outcomes).hint, hints
