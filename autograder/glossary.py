"""The names of the Spanish course notebooks, and the kit's names for the same things.

Students arrive from notebooks that build `MultiHeadAttention(heads, dim_embedding)` with `proyection_Q`,
`proyection_K`, `proyection_V` and stack `Nx` layers. The kit builds by keyword (`d_model=..., num_heads=...`)
and inspects `w_q`, `w_k`, `w_v`, so such a module fails at its first build or load with a Python error that
names one side of the pair. `explain` turns that error's text into the missing sentence ("`dim_embedding` is
`d_model` here"), in the current language; the bundle's README has the same table.
"""

from __future__ import annotations

import re

from .i18n import _

# Their name -> the kit's name (docs/contract.md).
GLOSSARY = {
    "dim_embedding": "d_model",
    "heads": "num_heads",
    "proyection_Q": "w_q",
    "proyection_K": "w_k",
    "proyection_V": "w_v",
    "Nx": "num_layers",
}
KIT_NAMES = {ours: theirs for theirs, ours in GLOSSARY.items()}

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
    names = _identifiers(error)
    sentences = []
    for name in names:
        if name in GLOSSARY:
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
