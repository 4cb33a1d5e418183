"""Do the student bundle's hints name the real mistake, and only true causes? (issue 34; docs/selfcheck.md quotes
the figures)

    python benchmarks/hint_corpus.py [--lang en|es ...] [--case ID ...] [--json OUT]

The corpus: the reference with one realistic mistake put back, written the way the issue's corpora were (a
student's own module, one mistake per round), none taken from autograder/bugs (the catalog the kit was tuned to).
For each language the bundle is built (`release DEST --lang L`) and each case is checked by the bundle's own
checker in a fresh process (its `autograder` package first on the path: no graded-side diagnoses, as a student
runs it), one component at a time. Per case:

- named: the hint the points table shows (results.strongest_failure) holds the words of the real mistake's hint
  (`marker`: English words of one of the kit's hints; in Spanish, that hint's translation);
- untrue: failing hints that name a cause (a phrase of `CAUSES`) that is not the case's;
- caught: a visible property fails.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    id: str
    component: str
    edits: tuple[
        tuple[str, str], ...
    ]  # (old, new) in solutions/<component>.py, each old found once
    marker: str  # English words of the real mistake's hint (a kit msgid holds them)


def case(id, component, marker, *edits):
    return Case(id, component, tuple(edits), marker)


SPLIT = "view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)"
CORPUS = [
    # attention_numpy
    case(
        "np_no_max_shift",
        "attention_numpy",
        "subtract",
        ("exp = np.exp(x - x_max)", "exp = np.exp(x)"),
    ),
    case("np_dot_T", "attention_numpy", "`.T` reverses", ("q @ np.swapaxes(k, -1, -2)", "q @ k.T")),
    case(
        "np_ln_ddof",
        "attention_numpy",
        "unbiased",
        (
            "var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)",
            "var = np.var(x, axis=-1, ddof=1, keepdims=True)",
        ),
    ),
    case(
        "np_mean_no_keepdims",
        "attention_numpy",
        "without keepdims",
        ("mean = np.mean(x, axis=-1, keepdims=True)", "mean = np.mean(x, axis=-1)"),
    ),
    case(
        "np_rounded_output",
        "attention_numpy",
        "is rounded to",
        ("return weights @ v, weights", "return np.around(weights @ v, 3), weights"),
    ),
    # attention
    case("no_scaling", "attention", "no scaling", ("/ math.sqrt(d_k)", "")),
    case(
        "scaled_by_d_v",
        "attention",
        "sqrt(d_v)",
        ("/ math.sqrt(d_k)", "/ math.sqrt(value.size(-1))"),
    ),
    case(
        "mask_multiplied",
        "attention",
        "multiplied by the mask",
        ('scores = scores.masked_fill(~mask, float("-inf"))', "scores = scores * mask"),
    ),
    case(
        "mask_inverted", "attention", "inverted mask", ("masked_fill(~mask,", "masked_fill(mask,")
    ),
    case(
        "minus_1e9",
        "attention",
        "-1e9",
        ('masked_fill(~mask, float("-inf"))', "masked_fill(~mask, -1e9)"),
    ),
    case(
        "key_view_as_transpose",
        "attention",
        "a view is not a transpose",
        (
            "query @ key.transpose(-2, -1)",
            "query @ key.view(*key.shape[:-2], key.size(-1), key.size(-2))",
        ),
    ),
    case(
        "softmax_no_max_shift",
        "attention",
        "subtract",
        ("exp = torch.exp(x - x_max)", "exp = torch.exp(x)"),
    ),
    # mask
    case("causal_triu", "mask", "upper", ("torch.tril(", "torch.triu(")),
    case("padding_inverted", "mask", "inverted", ("(tokens != pad_id)", "(tokens == pad_id)")),
    # multi_head
    case(
        "split_without_transpose",
        "multi_head",
        "mixes positions",
        (
            "q = self.w_q(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)",
            "q = self.w_q(query).view(batch, self.num_heads, m_q, self.d_k)",
        ),
        (
            "k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)",
            "k = self.w_k(key).view(batch, self.num_heads, m_k, self.d_k)",
        ),
        (
            "v = self.w_v(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)",
            "v = self.w_v(value).view(batch, self.num_heads, m_k, self.d_k)",
        ),
    ),
    case(
        "q_k_swapped",
        "multi_head",
        "Q and K projections swapped",
        ("q = self.w_q(query)", "q = self.w_k(query)"),
        ("k = self.w_k(key)", "k = self.w_q(key)"),
    ),
    case(
        "merge_view_no_contiguous",
        "multi_head",
        "needs a contiguous tensor",
        ("heads.transpose(1, 2).contiguous().view(", "heads.transpose(1, 2).view("),
    ),
    case(
        "dropout_scaled_in_eval",
        "multi_head",
        "built with dropout=0",
        ("heads = self.dropout(weights) @ v", "heads = (weights * (1 - self.dropout.p)) @ v"),
    ),
    case("no_w_o", "multi_head", "w_o is missing", ("return self.w_o(merged)", "return merged")),
    # add_norm
    case(
        "eps_outside",
        "add_norm",
        "inside the square root",
        ("torch.sqrt(var + self.eps)", "(torch.sqrt(var) + self.eps)"),
    ),
    case(
        "unbiased_variance",
        "add_norm",
        "unbiased",
        ("var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)", "var = x.var(dim=-1, keepdim=True)"),
    ),
    case(
        "residual_after_norm",
        "add_norm",
        "after the norm",
        (
            "return self.norm(x + self.dropout(sublayer_output))",
            "return x + self.norm(self.dropout(sublayer_output))",
        ),
    ),
    case(
        "torch_mean_no_keepdim",
        "add_norm",
        "without keepdim=True",
        ("mean = x.mean(dim=-1, keepdim=True)", "mean = x.mean(dim=-1)"),
    ),
    # feed_forward
    case("no_relu", "feed_forward", "relu", ("self.linear_1(x).relu()", "self.linear_1(x)")),
    # positional_encoding
    case(
        "sin_cos_halves",
        "positional_encoding",
        "interleave",
        ("pe[:, 0::2] = torch.sin(angle)", "pe[:, : (d_model + 1) // 2] = torch.sin(angle)"),
        (
            "pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])",
            "pe[:, (d_model + 1) // 2 :] = torch.cos(angle[:, : d_model // 2])",
        ),
    ),
    case(
        "embedding_not_scaled",
        "positional_encoding",
        "sqrt(d_model)",
        (" * math.sqrt(self.d_model)", ""),
    ),
    # encoder
    case(
        "residual_adds_layer_input",
        "encoder",
        "the second residual adds the layer's input",
        (
            "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))",
            "        x0 = x\n        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))",
        ),
        (
            "        return self.add_norm_2(x, self.feed_forward(x))",
            "        return self.add_norm_2(x0, self.feed_forward(x))",
        ),
    ),
    case(
        "encoder_mask_dropped",
        "encoder",
        "the mask is ignored",
        ("self.self_attention(x, x, x, mask)", "self.self_attention(x, x, x)"),
    ),
    # decoder
    case(
        "cross_attention_memory_first",
        "decoder",
        "the query comes first",
        (
            "self.cross_attention(x, memory, memory, memory_mask)",
            "self.cross_attention(memory, x, x, memory_mask)",
        ),
    ),
    case(
        "cross_gets_target_mask",
        "decoder",
        "target_mask",
        (
            "self.cross_attention(x, memory, memory, memory_mask)",
            "self.cross_attention(x, memory, memory, target_mask)",
        ),
    ),
    # transformer
    case(
        "greedy_without_causal_mask",
        "transformer",
        "causal",
        ("target_mask = causal_mask(ys.size(1), device=src.device)", "target_mask = None"),
    ),
    case(
        "decode_with_src_embedding",
        "transformer",
        "tgt_embedding",
        ("self.tgt_embedding(tgt)", "self.src_embedding(tgt)"),
    ),
    # kv_cache
    case(
        "step_mask_off_by_one",
        "kv_cache",
        "off by one",
        (
            "causal_mask(t + n, device=tokens.device)[t:]",
            "torch.ones(n, t + n, dtype=torch.bool, device=tokens.device).tril(t - 1)",
        ),
    ),
    case(
        "no_memory_mask",
        "kv_cache",
        "memory_mask",
        (
            "                                           self.memory_mask))",
            "                                           None))",
        ),
    ),
    # training
    case(
        "mean_over_padding",
        "training",
        "padding positions count",
        (
            "return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)",
            "return per_position.mean()",
        ),
    ),
    case(
        "smoothing_v_minus_1_pad_included",
        "training",
        "q[pad_id] = 0",
        ("smoothing / (logits.size(-1) - 2)", "smoothing / (logits.size(-1) - 1)"),
        ("    true_dist[..., pad_id] = 0.0\n", ""),
    ),
    case(
        "shift_left",
        "training",
        "your shift_right",
        (
            "return torch.cat([bos, tgt[:, :-1]], dim=1)",
            "return torch.cat([tgt[:, 1:], bos], dim=1)",
        ),
    ),
    case("no_zero_grad", "training", "zero_grad", ("    optimizer.zero_grad()\n", "")),
    # beam_search
    case(
        "every_beam_starts_at_zero",
        "beam_search",
        "logp 0",
        ("logp[:, 0] = 0.0", "logp[:, :] = 0.0"),
    ),
    case(
        "ranked_without_penalty",
        "beam_search",
        "length penalty",
        (
            "ranked = candidates / new_lengths.to(candidates.dtype) ** length_penalty",
            "ranked = candidates",
        ),
    ),
]

# Phrases of hints that name a cause (English; each kit msgid holding one is translated for Spanish). A failing
# hint holding one that is not the case's marker names a cause the code does not have.
CAUSES = [
    "inverted mask",
    "mask is ignored",
    "no scaling",
    "divided by d_k",
    "multiplied by sqrt",
    "sqrt(d_v)",
    "swapped",
    "is missing",
    "without a transpose",
    "no transpose",
    "strided",
    "w_o is missing",
    "unbiased",
    "outside the square root",
    "eps goes inside",
    "eps is missing",
    "uses eps =",
    "wrong dim",
    "pre-norm",
    "after the norm",
    "the residual is missing",
    "sub-layer is skipped",
    "no causal mask",
    "-1e9",
    "weights are right",
    "is rounded to",
    "multiplied by the mask",
    "padding positions count",
    "gets no smoothing mass",
    "underflows",
    "not shifted",
    "accumulate",
    "the same layer",
    "reverse order",
    "only the last layer",
    "only the first layer",
    "stored after dropout",
    "dropout is active",
    "built with dropout=0",
    "second residual",
    "your shift_right",
    "contiguous",
    "keepdim",
    "counts from the front",
]


def apply(case: Case, solutions: Path, dest: Path) -> Path:
    shutil.copytree(solutions, dest, ignore=shutil.ignore_patterns("__pycache__"))
    path = dest / f"{case.component}.py"
    text = path.read_text()
    for old, new in case.edits:
        if text.count(old) != 1:
            raise ValueError(f"{case.id}: {old!r} found {text.count(old)} times")
        text = text.replace(old, new)
    path.write_text(text)
    return dest


def inside(bundle: Path, lang: str, cases: list[str]) -> None:
    """In the bundle's own checker (its autograder first on the path): one JSON line per case."""
    sys.path.insert(0, str(bundle))
    from autograder import i18n, results
    from autograder.check import run_suite

    assert Path(results.__file__).resolve().is_relative_to(bundle.resolve()), results.__file__
    chosen = [c for c in CORPUS if c.id in cases]
    with tempfile.TemporaryDirectory() as tmp, i18n.chosen(lang):
        for c in chosen:
            folder = apply(c, ROOT / "solutions", Path(tmp) / c.id / "sub")
            outcomes, _ = run_suite(folder, components=[c.component], include_hidden=False)
            mine = [o for o in outcomes if results.row_of(o) == c.component]
            # a bundle from before issue 34 (the baseline) shows the first failure
            first = getattr(
                results, "strongest_failure", lambda os: next((o for o in os if not o.passed), None)
            )
            top = first(mine)
            failing = [o.hint for o in mine if not o.passed]
            row = {"id": c.id, "table": top.hint if top else None, "hints": failing}
            row["property"] = top.property.name if top else None
            print(json.dumps(row), flush=True)


def translations(lang: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """English phrase -> its words in `lang`. A cause (CAUSES) is the claim a hint opens with, before its first
    colon ("inverted mask: ..."): its words are the longest placeholder-free run of that clause's translation, for
    the kit's msgids whose opening clause holds the phrase (a phrase later in a msgid is advice, not its claim). A
    marker: the longest such run of the whole translation of each msgid that holds it. The phrase itself always
    counts too (code stays as it is)."""
    from autograder import catalogs

    if lang == "en":
        return {}, {}
    catalog = [m for m in catalogs.read(lang) if m.id and isinstance(m.id, str) and m.string]

    def words(text: str) -> str:
        return max(re.split(r"\{\w*\}|[:;(),]", text), key=len).strip().lower()

    causes: dict[str, list[str]] = {}
    for phrase in CAUSES:
        for m in catalog:
            if phrase.lower() in m.id.split(":")[0].lower():
                causes.setdefault(phrase, []).append(words(m.string.split(":")[0]))
    markers: dict[str, list[str]] = {}
    for phrase in {c.marker for c in CORPUS}:
        for m in catalog:
            if phrase.lower() in m.id.lower():
                markers.setdefault(phrase, []).append(words(m.string))
    return causes, markers


def judge(row: dict, case: Case, words: tuple[dict, dict]) -> dict:
    causes, markers = words

    def holds(text: str, phrase: str, found: dict) -> bool:
        text = (text or "").lower()
        return phrase.lower() in text or any(w and w in text for w in found.get(phrase, []))

    untrue = [
        h
        for h in row["hints"]
        if any(holds(h, p, causes) for p in CAUSES) and not holds(h, case.marker, markers)
    ]
    return {
        "caught": bool(row["hints"]),
        "named": holds(row["table"], case.marker, markers),
        "untrue": untrue,
        "table": row["table"],
        "property": row["property"],
        "hints": row["hints"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lang", action="append")
    parser.add_argument("--case", action="append")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = args.case or [c.id for c in CORPUS]
    if args.inside:
        return inside(args.inside, args.lang[0], cases)
    from autograder import release

    report = {}
    for lang in args.lang or ["en", "es"]:
        with tempfile.TemporaryDirectory() as tmp:
            bundle = release.build(Path(tmp) / "bundle", lang=lang)
            run = subprocess.run(
                [sys.executable, __file__, "--inside", str(bundle), "--lang", lang]
                + [a for c in cases for a in ("--case", c)],
                capture_output=True,
                text=True,
                cwd=tmp,
            )
        if run.returncode:
            raise SystemExit(run.stderr[-3000:])
        words = translations(lang)
        by_id = {c.id: c for c in CORPUS}
        rows = {}
        for line in run.stdout.splitlines():
            row = json.loads(line)
            rows[row["id"]] = judge(row, by_id[row["id"]], words)
            r = rows[row["id"]]
            mark = "named" if r["named"] else ("caught" if r["caught"] else "MISSED")
            print(
                f"{lang} {row['id']:34} {mark:7} untrue={len(r['untrue'])} {r['property']} | {(r['table'] or '')[:110]}"
            )
            for h in r["untrue"]:
                print(f"      untrue: {h[:150]}")
        named = sum(r["named"] for r in rows.values())
        untrue = sum(bool(r["untrue"]) for r in rows.values())
        print(f"{lang}: {named}/{len(rows)} named, {untrue} cases with an untrue hint")
        report[lang] = rows
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
