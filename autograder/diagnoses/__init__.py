"""The graded side's by-hand mistake models, for diagnoses: what a component computes, written out on the checking
side, right or with one usual mistake made on purpose, so that a diagnosis can name the mistake whose output
matches a submission's.

They are answers, so they never ship (`release` leaves this package out; tests/test_bundle_answers.py checks the
bundle). The visible properties import them where they exist (`grade`, `check` in the kit) and, in the student
bundle, fall back on the default hint: the verdict never depends on them (docs/bundle.md).
"""
