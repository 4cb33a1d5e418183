# >>> hostile
# Seeded noise in place of the logits and the hidden states (see attention_numpy.append.py): an invariance of
# the logits and the dropout property held for it.
Transformer.forward = lambda self, src, tgt, src_mask=None, target_mask=None: torch.randn(*tgt.shape, self.generator.out_features)  # noqa: F821
Transformer.encode = lambda self, src, src_mask=None: torch.randn(*src.shape, self.generator.in_features)  # noqa: F821
Transformer.decode = lambda self, tgt, memory, target_mask=None, memory_mask=None: torch.randn(*tgt.shape, self.generator.in_features)  # noqa: F821


# <<< hostile
