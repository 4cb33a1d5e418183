from . import Bug

_FWD = "        return self.linear_2(self.dropout(self.linear_1(x).relu()))\n"

BUGS = [
    Bug(
        "feed_forward",
        "missing_relu",
        "no activation between the two linear layers",
        _FWD,
        "        return self.linear_2(self.dropout(self.linear_1(x)))\n",
        "the activation is missing",
    ),
    Bug(
        "feed_forward",
        "gelu_instead_of_relu",
        "GELU instead of ReLU",
        _FWD,
        "        return self.linear_2(self.dropout(nn.functional.gelu(self.linear_1(x))))\n",
        "gelu",
    ),
    Bug(
        "feed_forward",
        "tanh_instead_of_relu",
        "tanh instead of ReLU",
        _FWD,
        "        return self.linear_2(self.dropout(self.linear_1(x).tanh()))\n",
        "tanh",
    ),
    Bug(
        "feed_forward",
        "relu_before_linear_1",
        "linear_2(linear_1(relu(x))): ReLU on the input",
        _FWD,
        "        return self.linear_2(self.dropout(self.linear_1(x.relu())))\n",
        "before linear_1",
    ),
    Bug(
        "feed_forward",
        "relu_after_linear_2",
        "relu(linear_2(linear_1(x))): ReLU on the output",
        _FWD,
        "        return self.linear_2(self.dropout(self.linear_1(x))).relu()\n",
        "after linear_2",
    ),
    Bug(
        "feed_forward",
        "linear_dims_swapped",
        "linear_1 = nn.Linear(d_ff, d_model), linear_2 = nn.Linear(d_model, d_ff)",
        "        self.linear_1 = nn.Linear(d_model, d_ff)\n        self.linear_2 = nn.Linear(d_ff, d_model)\n",
        "        self.linear_1 = nn.Linear(d_ff, d_model)\n        self.linear_2 = nn.Linear(d_model, d_ff)\n",
        "linear_1 maps d_model -> d_ff",
    ),
    Bug(
        "feed_forward",
        "dropout_always_on",
        "F.dropout(..., training=True): dropout also in eval mode",
        _FWD,
        "        return self.linear_2(nn.functional.dropout(self.linear_1(x).relu(), self.dropout.p, "
        "training=True))\n",
        "in eval mode dropout is the identity",
    ),
    Bug(
        "feed_forward",
        "dropout_on_output",
        "dropout applied to the output instead of the hidden layer",
        _FWD,
        "        return self.dropout(self.linear_2(self.linear_1(x).relu()))\n",
        "dropout goes on the hidden",
        caught_visibly=True,
    ),
]

# issue 33: dropout in the wrong place, or nowhere, in training mode, checked visibly
BUGS += [
    Bug(
        "feed_forward",
        "dropout_on_input",
        "dropout applied to the input x instead of the hidden layer",
        _FWD,
        "        return self.linear_2(self.linear_1(self.dropout(x)).relu())\n",
        "dropout goes on the hidden",
        caught_visibly=True,
    ),
    Bug(
        "feed_forward",
        "no_dropout",
        "self.dropout created but never applied",
        _FWD,
        "        return self.linear_2(self.linear_1(x).relu())\n",
        "apply self.dropout",
        caught_visibly=True,
    ),
]
