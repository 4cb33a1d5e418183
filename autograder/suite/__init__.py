"""The property suite's machinery: the registry and runner (core), checks, strategies, expected values,
error hints, the diagnoses shared by several components, and what a component's visible and hidden properties
share, named for what it holds (numpy_warmup, heads, norms, layers, model_runs, decoding, beams,
beam_records, training_cases, copy_task: docs/extending.md, "File names and sizes"). autograder/properties/
holds only components."""
