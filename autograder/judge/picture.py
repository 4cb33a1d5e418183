"""The attention picture: the student's multi-head attention on one fixed example, beside the reference's.

The example is fixed (six tokens, two heads, a causal mask, float64 weights from a fixed seed), so every
student sees the same picture of the same computation. The reference comes from torch's nn.MultiheadAttention
with the same weights (expected_values.multi_head), computed here in the judge. The picture shows the weights of each
head and the output's difference from the reference's: weights can match while the output does not (heads
merged without a transpose), and the caption then says so in words.

Everything a worker sends is drawn as plain text (parse_math=False: a message like "$\\frac{" is not
mathtext), and a picture that cannot be drawn becomes a note in the feedback (grading_process.py), never a judge error.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
from dataclasses import dataclass

import torch

from ..i18n import _
from ..student_code import Call, StudentError
from ..suite import expected_values

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]
# The labels in the course's language: the same pattern (the 1st and 5th token alike), so the same vectors.
LABELS = {"es": ["el", "gato", "se", "comió", "el", "pescado"]}
D_MODEL, HEADS = 8, 2
MATCH = 1e-6  # float64 on a 6-token example: a correct implementation is within 1e-12 of torch's
PROBLEM_LINES, PROBLEM_WIDTH = 8, 34  # what is drawn of a message from the worker


@dataclass
class View:
    """What the student's MultiHeadAttention did on the example: weights (heads, m, m) and output (m, d), or why
    not (problem: the worker's message, bounded)."""

    weights: torch.Tensor | None = None
    output: torch.Tensor | None = None
    problem: str = ""


def example():
    g = torch.Generator().manual_seed(2017)
    f64 = torch.float64
    vectors = {tok: torch.randn(D_MODEL, generator=g, dtype=f64) for tok in dict.fromkeys(TOKENS)}
    # (1, 6, d): the two "the" are the same vector
    x = torch.stack([vectors[t] for t in TOKENS])[None]
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = torch.randn(D_MODEL, D_MODEL, generator=g, dtype=f64) * (
            1.5 / math.sqrt(D_MODEL)
        )
        state[f"{name}.bias"] = torch.zeros(D_MODEL, dtype=f64)
    mask = torch.ones(len(TOKENS), len(TOKENS), dtype=torch.bool).tril()
    return x, state, mask


@functools.cache
def reference() -> View:
    """Computed once per process (17 ms; the picture asks three times): callers only read it."""
    x, state, mask = example()
    out, w = expected_values.multi_head(state, D_MODEL, HEADS, x, x, x, mask)
    return View(w[0], out[0])


def reference_weights() -> torch.Tensor:
    return reference().weights


def student_view(student) -> View:
    """`target` holds the student's own files. Never raises for what the student's code does."""
    from .remote import WorkerLost

    x, state, mask = example()
    m = len(TOKENS)
    try:
        handle = student.build(
            "multi_head",
            "MultiHeadAttention",
            state=state,
            dtype=torch.float64,
            d_model=D_MODEL,
            num_heads=HEADS,
        )
        reply = student.run(
            Call(handle, "forward", (x, x, x), {"mask": mask}, read=("attention_weights",))
        )
    except StudentError as e:
        return View(problem=e.message)
    except WorkerLost as e:
        return View(problem=e.error.message)
    out = reply.value
    output = (
        out[0].to(torch.float64)
        if isinstance(out, torch.Tensor) and tuple(out.shape) == (1, m, D_MODEL)
        else None
    )
    w = reply.attrs.get("attention_weights")
    if not isinstance(w, torch.Tensor):
        return View(
            output=output,
            problem=_("attention_weights is {type} after a forward call, expected a tensor").format(
                type=type(w).__name__
            ),
        )
    if tuple(w.shape) != (1, HEADS, m, m):
        return View(
            output=output,
            problem=_("attention_weights has shape {shape}, expected {expected}").format(
                shape=tuple(w.shape), expected=(1, HEADS, m, m)
            ),
        )
    return View(w[0].to(torch.float64), output)


def _close(a: torch.Tensor | None, b: torch.Tensor) -> bool:
    return a is not None and bool(torch.isfinite(a).all()) and float((a - b).abs().max()) <= MATCH


def caption(view: View) -> str:
    """One plain sentence about what the picture shows; the truth when the weights match but the output does not."""
    ref = reference()
    weights_ok, output_ok = _close(view.weights, ref.weights), _close(view.output, ref.output)
    if view.weights is None:
        # the worker's text stays data: a placeholder's value, never looked up in the catalog
        return _("There are no weights to picture: {problem}").format(
            problem=view.problem or _("no weights")
        )
    if view.output is None:
        return _(
            "Your forward call did not return a tensor of shape (1, 6, 8), so only the weights are "
            "pictured."
        )
    worst = f"{float((view.output - ref.output).abs().max()):.3g}"
    if weights_ok and output_ok:
        return _("Your weights and your output match the reference on this example.")
    if weights_ok:
        return _(
            "Your attention weights match the reference, but your output does not (largest difference "
            "{difference}): the mistake comes after the weights, where the heads are merged back or "
            "projected with w_o."
        ).format(difference=worst)
    if output_ok:
        return _(
            "Your output matches the reference, but the weights you store in attention_weights do not."
        )
    return _(
        "Neither your attention weights nor your output match the reference (largest output "
        "difference {difference})."
    ).format(difference=worst)


def key(view: View) -> str:
    h = hashlib.sha256(view.problem.encode("utf-8", "replace"))
    for t in (view.weights, view.output):
        h.update(b"-" if t is None else t.nan_to_num(-1.0).mul(1e6).round().numpy().tobytes())
    return h.hexdigest()


def draw(view: View, limit: int = 1200) -> dict:
    """{"png": bytes or None, "caption": at most `limit` characters}: a picture that cannot be drawn is a note
    in the feedback, never a failed section or a judge error."""
    png, text = None, ""
    try:
        text = caption(view)[:limit]
        png = render(view)
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the worker's text or numbers do to matplotlib
        text = (
            _("The picture could not be drawn ({error}). {caption}")
            .format(error=type(e).__name__, caption=text)
            .strip()[:limit]
        )
    return {"png": png, "caption": text}


# The layout is fixed, in inches on a 7.6 x 9.6 in figure at 90 dpi (684 x 864 pixels). matplotlib's constrained
# layout computed it for every picture with an extra, measuring draw of all ~240 texts: most of the CPU time a
# picture saved, 0.4 -> 0.2 s (docs/judge.md, "Speed"). The margins hold the longest labels of either language
# ("pescado" rotated 45°, "consulta").
WIDTH, HEIGHT, DPI = 7.6, 9.6, 90
PANEL = 2.2  # a head's square panel
# the columns' left edges; each column's tokens and axis label sit to the left of its panels
LEFT, COLUMN_2 = 0.85, 4.05
# the rows' top edges (two heads, then the output); a title above each, the rotated tokens and a label below
TOPS = (9.25, 5.95, 2.65)
OUTPUT_BOTTOM = 0.45  # the output row (aspect auto) reaches down to its feature numbers and label
BAR_WIDTH = 0.17


def _rect(x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
    return (x / WIDTH, y / HEIGHT, w / WIDTH, h / HEIGHT)


def render(view: View) -> bytes:
    """The picture's PNG bytes, the same for the same view in every process."""
    buf = io.BytesIO()
    figure(view).savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# long: one figure's panels, laid out top to bottom
def figure(view: View):
    """A matplotlib Figure: a row per head (the student's weights left, the reference's right), then the
    output's difference from the reference's. Every text from the worker is plain text."""
    # A Figure on the Agg canvas, not pyplot: nothing kept in a global registry of figures, nothing to close
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ref = reference()
    fig = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI)
    FigureCanvasAgg(fig)
    for h in range(HEADS):
        titles = (_("head {n}: yours"), _("head {n}: reference"))
        for col, w in enumerate((view.weights, ref.weights)):
            ax = fig.add_axes(_rect((LEFT, COLUMN_2)[col], TOPS[h] - PANEL, PANEL, PANEL))
            ax.set_title(titles[col].format(n=h + 1), fontsize=11)
            if w is None:
                _problem(ax, view.problem or _("no weights"))
                continue
            img = ax.imshow(w[h].numpy(), vmin=0, vmax=1, cmap="viridis")
            _tokens(ax, _("key"), _("query"))
            for i in range(len(TOKENS)):
                for j in range(len(TOKENS)):
                    v = float(w[h, i, j])
                    if not math.isnan(v):
                        ax.text(
                            j,
                            i,
                            f"{v:.2f}",
                            ha="center",
                            va="center",
                            fontsize=6.5,
                            color="white" if v < 0.6 else "black",
                        )
    # the heads' colour bar: 60 % of the two rows' height, centred beside them
    span = TOPS[0] - (TOPS[HEADS - 1] - PANEL)
    bar = fig.add_axes(_rect(COLUMN_2 + PANEL + 0.3, TOPS[0] - 0.8 * span, BAR_WIDTH, 0.6 * span))
    fig.colorbar(img, cax=bar, label=_("attention weight"))
    height = TOPS[HEADS] - OUTPUT_BOTTOM
    ax = fig.add_axes(_rect(LEFT, OUTPUT_BOTTOM, PANEL, height))
    ax.set_title(_("output: yours minus the reference"), fontsize=11)
    if view.output is None:
        _problem(ax, _("no output of shape (1, 6, 8) to compare"))
    else:
        diff = (view.output - ref.output).nan_to_num(nan=float("inf")).clamp(-9.99, 9.99).numpy()
        span = max(1e-3, float(abs(diff).max()))
        img = ax.imshow(diff, vmin=-span, vmax=span, cmap="coolwarm", aspect="auto")
        ax.set_yticks(range(len(TOKENS)), _labels(), fontsize=8)
        ax.set_xticks(range(D_MODEL), [str(i) for i in range(D_MODEL)], fontsize=8)
        ax.set_xlabel(_("feature"), fontsize=9)
        bar = fig.add_axes(
            _rect(LEFT + PANEL + 0.1, OUTPUT_BOTTOM + 0.1 * height, 0.1, 0.8 * height)
        )
        fig.colorbar(img, cax=bar)
    fig.text(
        (COLUMN_2 + 0.2) / WIDTH,
        (OUTPUT_BOTTOM + height / 2) / HEIGHT,
        "\n".join(_wrap(caption(view), PROBLEM_WIDTH)[:PROBLEM_LINES]),
        ha="left",
        va="center",
        fontsize=9,
        parse_math=False,
    )
    return fig


def _labels() -> list[str]:
    """The tokens in the course's language, on every panel (the output's rows too)."""
    from ..i18n import current_language

    return LABELS.get(current_language(), TOKENS)


def _tokens(ax, x_label: str, y_label: str) -> None:
    labels = _labels()
    ax.set_xticks(range(len(TOKENS)), labels, fontsize=8, rotation=45)
    ax.set_yticks(range(len(TOKENS)), labels, fontsize=8)
    ax.set_xlabel(x_label, fontsize=9)
    ax.set_ylabel(y_label, fontsize=9)


def _problem(ax, text: str) -> None:
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        "\n".join(_wrap(text, PROBLEM_WIDTH)[:PROBLEM_LINES]),
        ha="center",
        va="center",
        fontsize=9,
        color="#a40000",
        parse_math=False,
    )


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text[: PROBLEM_LINES * width * 2], width) or [""]
