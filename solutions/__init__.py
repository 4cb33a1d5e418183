"""Reference solutions of the Transformer exercises, one module per component."""
