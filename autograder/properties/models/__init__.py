"""The checking side's models: what a component computes, assembled from torch's own layers and closed forms
with the kit's weights, right or with one usual mistake given as flags. Each concept has one model here and one
config (the Transformer's sizes and weights: `transformer.TransformerConfig`).

They need the library calls the exercises forbid, so they are no answer and ship in the student bundle
(`release` copies this folder; tests/test_stubs_and_release.py lists what it holds). The by-hand mistake models
are answers: each lives beside its flags, in its module's graded-only region, which `release` strips (a module's
BY_HAND: the models on the graded side, None in the bundle; suite/graded.py, docs/bundle.md).
"""
