"""The attention picture: the student's multi-head attention weights beside the reference's, on one example.

The example is fixed (six tokens, two heads, a causal mask, float64 weights from a fixed seed), so every
student sees the same picture of the same computation. The reference weights come from torch's
nn.MultiheadAttention with the same weights (oracles.multi_head), computed here in the judge.
"""
from __future__ import annotations

import hashlib
import io
import math

import torch

from ..properties import oracles
from ..target import Call, StudentError

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]
D_MODEL, HEADS = 8, 2


def example():
    g = torch.Generator().manual_seed(2017)
    f64 = torch.float64
    vectors = {tok: torch.randn(D_MODEL, generator=g, dtype=f64) for tok in dict.fromkeys(TOKENS)}
    x = torch.stack([vectors[t] for t in TOKENS])[None]  # (1, 6, d): the two "the" are the same vector
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = torch.randn(D_MODEL, D_MODEL, generator=g, dtype=f64) * (1.5 / math.sqrt(D_MODEL))
        state[f"{name}.bias"] = torch.zeros(D_MODEL, dtype=f64)
    mask = torch.ones(len(TOKENS), len(TOKENS), dtype=torch.bool).tril()
    return x, state, mask


def reference_weights() -> torch.Tensor:
    x, state, mask = example()
    return oracles.multi_head(state, D_MODEL, HEADS, x, x, x, mask)[1][0]  # (heads, m, m)


def student_weights(target) -> tuple[torch.Tensor | None, str]:
    """(weights (heads, m, m) or None, what went wrong). `target` holds the student's own files."""
    from .remote import WorkerLost

    x, state, mask = example()
    m = len(TOKENS)
    try:
        handle = target.build("multi_head", "MultiHeadAttention", state=state, dtype=torch.float64,
                              d_model=D_MODEL, num_heads=HEADS)
        reply = target.run(Call(handle, "forward", (x, x, x), {"mask": mask}, read=("attention_weights",)))
    except StudentError as e:
        return None, e.message
    except WorkerLost as e:
        return None, e.error.message
    w = reply.attrs.get("attention_weights")
    if not isinstance(w, torch.Tensor):
        return None, f"attention_weights is {type(w).__name__} after a forward call, expected a tensor"
    if tuple(w.shape) != (1, HEADS, m, m):
        return None, f"attention_weights has shape {tuple(w.shape)}, expected {(1, HEADS, m, m)}"
    return w[0].to(torch.float64), ""


def key(weights: torch.Tensor | None, problem: str) -> str:
    if weights is None:
        return "problem:" + problem
    return hashlib.sha256(weights.nan_to_num(-1.0).mul(1e6).round().numpy().tobytes()).hexdigest()


def render(weights: torch.Tensor | None, problem: str) -> bytes:
    """PNG bytes: one row per head, the student's weights left, the reference's right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = reference_weights()
    fig, axes = plt.subplots(HEADS, 2, figsize=(7.6, 3.2 * HEADS), dpi=90, squeeze=False, layout="constrained")
    for h in range(HEADS):
        for col, (who, w) in enumerate((("yours", weights), ("reference", ref))):
            ax = axes[h][col]
            ax.set_title(f"head {h + 1}: {who}", fontsize=11)
            if w is None:
                ax.set_axis_off()
                text = "\n".join(_wrap(problem or "no weights", 34)[:8])
                ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9, wrap=True, color="#a40000")
                continue
            img = ax.imshow(w[h].numpy(), vmin=0, vmax=1, cmap="viridis")
            ax.set_xticks(range(len(TOKENS)), TOKENS, fontsize=8, rotation=45)
            ax.set_yticks(range(len(TOKENS)), TOKENS, fontsize=8)
            ax.set_xlabel("key", fontsize=9)
            ax.set_ylabel("query", fontsize=9)
            for i in range(len(TOKENS)):
                for j in range(len(TOKENS)):
                    v = float(w[h, i, j])
                    if not math.isnan(v):
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                                color="white" if v < 0.6 else "black")
    fig.colorbar(img, ax=axes.ravel().tolist(), shrink=0.6, label="attention weight")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]
