# >>> hostile
# Computes nothing (issue 11, item 7): the output and attention_weights are NaN of the right shape.
class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        shape = (query.shape[0], self.num_heads, query.shape[1], key.shape[1])
        self.attention_weights = query.new_full(shape, float("nan"))
        return query.new_full(query.shape, float("nan"))
# <<< hostile
