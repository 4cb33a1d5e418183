"""The property suite's machinery: the registry and runner (core), checks, strategies, expected values,
error hints, the diagnoses shared by several components. autograder/properties/ holds only components."""
