from ..properties.models.positional_encoding import PeMistake
from . import Bug

_FILL = (
    "    pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])\n"
)
_EVEN = "    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # the 2i values\n"
_ANGLE = (
    "    angle = position / torch.pow(10000.0, even / d_model)  # (max_len, ceil(d_model / 2))\n"
)

BUGS = [
    Bug(
        "positional_encoding",
        "sin_cos_swapped",
        "cos in the even columns, sin in the odd ones",
        _FILL,
        "    pe[:, 0::2] = torch.cos(angle)\n    pe[:, 1::2] = torch.sin(angle[:, : d_model // 2])\n",
        mistake=PeMistake.SIN_COS_SWAPPED,
    ),
    Bug(
        "positional_encoding",
        "pair_at_different_frequencies",
        "the exponent uses each column's own index, so cos(2i+1) runs at another frequency than sin(2i)",
        _FILL,
        "    pe[:, 0::2] = torch.sin(angle)\n"
        "    pe[:, 1::2] = torch.cos(position / torch.pow(10000.0, (even[: d_model // 2] + 1) / d_model))\n",
        mistake=PeMistake.COS_OWN_COLUMN,
    ),
    Bug(
        "positional_encoding",
        "exponent_i_not_2i",
        "exponent i/d_model with i the pair index",
        _EVEN,
        "    even = torch.arange(0, d_model, 2, dtype=torch.float64) / 2  # the 2i values\n",
        mistake=PeMistake.PAIR_INDEX,
    ),
    Bug(
        "positional_encoding",
        "base_1000",
        "base 1000 instead of 10000",
        _ANGLE,
        _ANGLE.replace("10000.0", "1000.0"),
        mistake=PeMistake.BASE_1000,
    ),
    Bug(
        "positional_encoding",
        "multiply_not_divide",
        "position * 10000^(2i/d) instead of dividing",
        _ANGLE,
        _ANGLE.replace("position / torch.pow", "position * torch.pow"),
        mistake=PeMistake.MULTIPLIED,
    ),
    Bug(
        "positional_encoding",
        "returns_float64",
        "returned the float64 table instead of the default dtype",
        "    return pe.to(torch.get_default_dtype())\n",
        "    return pe\n",
        "default float dtype",
    ),
    Bug(
        "positional_encoding",
        "odd_d_model_crash",
        "cos of every angle: breaks for an odd d_model",
        _FILL,
        "    pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)\n",
        "odd d_model",
    ),
    Bug(
        "positional_encoding",
        "pe_as_parameter",
        "the table is an nn.Parameter (trainable) instead of a buffer",
        '        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model).unsqueeze(0))\n',
        "        self.pe = nn.Parameter(sinusoidal_encoding(max_len, d_model).unsqueeze(0))\n",
        "register_buffer",
    ),
    Bug(
        "positional_encoding",
        "pe_scales_x",
        "PositionalEncoding also scales x by sqrt(d_model)",
        "        return self.dropout(x + self.pe[:, : x.size(1)].to(x.dtype))\n",
        "        return self.dropout(x * math.sqrt(x.size(-1)) + self.pe[:, : x.size(1)].to(x.dtype))\n",
        "belongs to TokenEmbedding",
    ),
    Bug(
        "positional_encoding",
        "embedding_missing_scale",
        "forgot the sqrt(d_model) scale",
        "        return self.embedding(tokens) * math.sqrt(self.d_model)\n",
        "        return self.embedding(tokens)\n",
        "missing the sqrt(d_model) scale",
    ),
    Bug(
        "positional_encoding",
        "embedding_scaled_by_d_model",
        "scaled by d_model instead of sqrt(d_model)",
        "        return self.embedding(tokens) * math.sqrt(self.d_model)\n",
        "        return self.embedding(tokens) * self.d_model\n",
        "instead of sqrt(d_model)",
    ),
]

# The two most common slips of published tutorials, written as the small loop they come in.
_TABLE = _EVEN + _ANGLE + "    pe = torch.zeros(max_len, d_model, dtype=torch.float64)\n" + _FILL
BUGS += [
    Bug(
        "positional_encoding",
        "exponent_doubled_loop_index",
        "loop `for i in range(0, d_model, 2)` with 10000 ** (2 * i / d_model): i already steps by 2",
        _TABLE,
        "    pe = torch.zeros(max_len, d_model, dtype=torch.float64)\n"
        "    for i in range(0, d_model, 2):\n"
        "        angle = position[:, 0] / 10000.0 ** (2 * i / d_model)\n"
        "        pe[:, i] = torch.sin(angle)\n"
        "        if i + 1 < d_model:\n"
        "            pe[:, i + 1] = torch.cos(angle)\n",
        mistake=PeMistake.DOUBLED_EXPONENT,
        caught_visibly=True,
    ),
    Bug(
        "positional_encoding",
        "cos_at_next_pair_frequency",
        "cos(p / 10000 ** ((i + 2) / d_model)) in column i + 1: the next pair's frequency",
        _TABLE,
        "    pe = torch.zeros(max_len, d_model, dtype=torch.float64)\n"
        "    for i in range(0, d_model, 2):\n"
        "        pe[:, i] = torch.sin(position[:, 0] / 10000.0 ** (i / d_model))\n"
        "        if i + 1 < d_model:\n"
        "            pe[:, i + 1] = torch.cos(position[:, 0] / 10000.0 ** ((i + 2) / d_model))\n",
        mistake=PeMistake.COS_NEXT_PAIR,
        caught_visibly=True,
    ),
]

# issue 33: the table laid out in two halves
BUGS.append(
    Bug(
        "positional_encoding",
        "sin_cos_concatenated",
        "the table as [sin | cos]: all the sines first, then all the cosines, not interleaved",
        "    pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])\n",
        "    half = angle.size(1)\n    pe[:, :half] = torch.sin(angle)\n    pe[:, half:] = torch.cos(angle[:, : d_model // 2])\n",
        "([sin | cos])",
    )
)

# issue 36: a bug for each of PeMistake's flags that had none, each showing its flag's hint
BUGS += [
    Bug(
        "positional_encoding",
        "sin_in_every_column",
        "copied the sin line for the odd columns and forgot to change it to cos",
        "    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])\n",
        "    pe[:, 1::2] = torch.sin(angle[:, : d_model // 2])\n",
        mistake=PeMistake.ALL_SIN,
    ),
    Bug(
        "positional_encoding",
        "positions_from_1",
        "numbered the positions 1, 2, ..., max_len, as the words of a sentence are counted",
        "    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)\n",
        "    position = torch.arange(1, max_len + 1, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)\n",
        mistake=PeMistake.POSITIONS_FROM_1,
    ),
    Bug(
        "positional_encoding",
        "tutorial_loop_doubled_and_cos_next_pair",
        "the loop of a well-known tutorial: sin(p / 10000 ** (2 * i / d_model)) in column i and "
        "cos(p / 10000 ** (2 * (i + 1) / d_model)) in column i + 1, with i stepping by 2",
        _TABLE,
        "    pe = torch.zeros(max_len, d_model, dtype=torch.float64)\n"
        "    for i in range(0, d_model, 2):\n"
        "        pe[:, i] = torch.sin(position[:, 0] / 10000.0 ** (2 * i / d_model))\n"
        "        if i + 1 < d_model:\n"
        "            pe[:, i + 1] = torch.cos(position[:, 0] / 10000.0 ** (2 * (i + 1) / d_model))\n",
        mistake=PeMistake.DOUBLED_EXPONENT | PeMistake.COS_NEXT_PAIR,
    ),
]
