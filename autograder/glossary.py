"""The names of the Spanish course notebooks, and the kit's names for the same things.

Students arrive from notebooks that build `MultiHeadAttention(heads, dim_embedding)` with `proyection_Q`,
`proyection_K`, `proyection_V` and stack `Nx` layers. The kit builds by keyword (`d_model=..., num_heads=...`)
and inspects `w_q`, `w_k`, `w_v`, so such a module fails at its first build or load with a Python error that
names one side of the pair. `explain` turns that error's text into the missing sentence ("`dim_embedding` is
`d_model` here"), in the current language; the bundle's README has the same table.
"""

from __future__ import annotations

import re

from .i18n import N_, _

# Their name -> the kit's name (docs/contract.md).
GLOSSARY = {
    "dim_embedding": "d_model",
    "heads": "num_heads",
    "proyection_Q": "w_q",
    "proyection_K": "w_k",
    "proyection_V": "w_v",
    "attention": "w_o",
    "dim_proyection": "d_k",
    "Nx": "num_layers",
    "increment": "d_ff",
    "normalization": "norm",
    "encoder_layers": "layers",
    "ScaledDotProductAttention": "scaled_dot_product_attention",
    "create_mask": "causal_mask, padding_mask",
    "positional_encoding": "pe",
}
# The names that are more than a rename: their own sentence.
SENTENCES = {
    "increment": N_(
        "`increment` multiplies d_model in the course notebooks; the kit takes the width itself: "
        "`d_ff` = increment * d_model (4 * 512 = 2048)."
    ),
    "ScaledDotProductAttention": N_(
        "The course's `ScaledDotProductAttention` class is a function here: "
        "`scaled_dot_product_attention(query, key, value, mask)` returns (output, weights)."
    ),
    "create_mask": N_(
        "The course's `create_mask` is two functions here: `causal_mask(size)` and "
        "`padding_mask(tokens, pad_id)`."
    ),
    "positional_encoding": N_(
        'The course\'s `positional_encoding` buffer is `pe` here (register_buffer("pe", ...)); '
        "`positional_encoding` is the Transformer's PositionalEncoding module."
    ),
}
# The kit's names told back as the course's (`w_o` is what the course calls `attention`): plain renames only
# (`layers` is also the decoder's, `d_ff` is not `increment`).
KIT_NAMES = {
    ours: theirs
    for theirs, ours in GLOSSARY.items()
    if theirs not in SENTENCES and ours != "layers"
}
# An import error names a module, never one of these (`No module named 'attention'`).
_MODULE = re.compile(r"No module named '[\w.]+'|module '[\w.]+'")

# Where a Python error names an identifier: 'quoted' (TypeError, AttributeError), and the parameter lists of a
# weight load ("expected parameters/buffers named w_k.bias, ...; the module has proyection_K.bias, ...").
_QUOTED = re.compile(r"'([A-Za-z_]\w*)'")
_PARAMETER_LIST = re.compile(r"(?:named|the module has) ((?:[A-Za-z_][\w.]*(?:, )?)+)")


def _identifiers(text: str) -> list[str]:
    names = _QUOTED.findall(text)
    for listed in _PARAMETER_LIST.findall(text):
        names += [name.split(".")[0] for name in listed.split(", ")]
    return list(dict.fromkeys(names))  # in order, once


def explain(error: str) -> str:
    """One sentence per course-notebook name the error reveals, or "" (most errors have nothing to do with it).

    explain("__init__() got an unexpected keyword argument 'dim_embedding'") -> "`dim_embedding` is `d_model` here."
    """
    names = _identifiers(_MODULE.sub("", error))
    sentences = []
    for name in names:
        if name in SENTENCES:
            sentences.append(_(SENTENCES[name]))
        elif name in GLOSSARY:
            sentences.append(
                _("`{theirs}` is `{ours}` here.").format(theirs=name, ours=GLOSSARY[name])
            )
        elif name in KIT_NAMES and KIT_NAMES[name] not in names:
            sentences.append(
                _(
                    "`{ours}` is what the course notebooks call `{theirs}`: name it `{ours}` here."
                ).format(ours=name, theirs=KIT_NAMES[name])
            )
    return " ".join(sentences)


def after(sentence: str, text: str) -> str:
    """`text` after a whole sentence: a text that starts in lower case (most hints and messages do, to follow a
    colon) starts with a capital after the sentence's full stop."""
    # an identifier first (`kv_cache.py earns ...`, `multi_head uses ...`) keeps its case
    identifier = re.match(r"\w+[._:]", text)
    if sentence.rstrip().endswith((".", "!", "?")) and text[:1].islower() and not identifier:
        text = text[0].upper() + text[1:]
    return f"{sentence} {text}".strip()


def words(o):
    """The glossary pass: a failure whose message names a course notebook's name for something
    (`dim_embedding`, `proyection_Q`) says the kit's name for it first in its hint; once, however often applied.
    `o`: a core.Outcome (here, below the suite, by its fields: passed, message, hint)."""
    sentence = "" if o.passed else explain(o.message)
    if sentence and sentence not in o.hint:
        o.hint = after(sentence, o.hint)
    return o
