# >>> hostile
# Computes nothing (issue 11, item 7): the output and attention_weights are zeros of the right shape.
class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        shape = (query.shape[0], self.num_heads, query.shape[1], key.shape[1])
        self.attention_weights = query.new_full(shape, 0.0)
        return query.new_full(query.shape, 0.0)
# <<< hostile
