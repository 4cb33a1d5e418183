# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Smuggle a long text into the feedback through parameter names: 400 parameters with 2 000-character names
# (800 000 characters, a whole file's worth), reported back when the parameters are named wrongly.
class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # >>> hostile
        for _i in range(400):
            self.register_parameter(f"p{_i:03d}_" + "SMUGGLED_LINE_" * 142, torch.nn.Parameter(torch.zeros(1)))
        # <<< hostile
