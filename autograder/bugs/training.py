from ..properties.models.trainer import TrainingMistake
from . import Bug

BUGS = [
    Bug(
        "training",
        "targets_not_shifted",
        "the decoder reads the targets themselves: it sees the answer",
        "decoder_input = shift_right(tgt, bos_id)",
        "decoder_input = tgt",
        mistake=TrainingMistake.NOT_SHIFTED,
    ),
    Bug(
        "training",
        "padding_counted_in_loss",
        "the loss averages over every position, padding included",
        "return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)",
        "return per_position.mean()",
        mistake=TrainingMistake.PAD_COUNTED,
    ),
    Bug(
        "training",
        "smoothing_mass_on_padding",
        "the padding token keeps its share of the smoothing mass",
        "    true_dist[..., pad_id] = 0.0\n",
        "",
        mistake=TrainingMistake.PAD_MASS,
    ),
    Bug(
        "training",
        "schedule_peaks_early",
        "the warm-up term is step * warmup_steps ** -0.5: the peak comes early",
        "step * warmup_steps ** -1.5",
        "step * warmup_steps ** -0.5",
        "peaks at step = warmup_steps",
    ),
    Bug(
        "training",
        "no_zero_grad",
        "optimizer.zero_grad() is missing: gradients accumulate across steps",
        "    optimizer.zero_grad()\n",
        "",
        mistake=TrainingMistake.NO_ZERO_GRAD,
    ),
    Bug(
        "training",
        "no_causal_mask_in_training",
        "teacher forcing without the causal mask",
        "logits = model(src, decoder_input, padding_mask(src, pad_id), target_mask)",
        "logits = model(src, decoder_input, padding_mask(src, pad_id))",
        mistake=TrainingMistake.NO_CAUSAL_MASK,
    ),
    Bug(
        "training",
        "no_source_padding_mask",
        "teacher forcing without the source padding mask",
        "logits = model(src, decoder_input, padding_mask(src, pad_id), target_mask)",
        "logits = model(src, decoder_input, None, target_mask)",
        mistake=TrainingMistake.NO_SRC_MASK,
    ),
    Bug(
        "training",
        "smoothing_over_vocab_minus_one",
        "the smoothing mass is split V - 1 ways, padding ignored",
        "smoothing / (logits.size(-1) - 2)",
        "smoothing / (logits.size(-1) - 1)",
        "smoothing / (V - 2)",
    ),
    Bug(
        "training",
        "loss_summed",
        "the loss is the sum over positions, not their mean",
        "return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)",
        "return per_position.masked_fill(~real, 0.0).sum()",
        mistake=TrainingMistake.SUMMED,
    ),
    Bug(
        "training",
        "schedule_without_factor",
        "learning_rate ignores factor",
        "return factor * d_model ** -0.5 * min(",
        "return d_model ** -0.5 * min(",
        "multiply by factor",
    ),
    Bug(
        "training",
        "adam_default_betas",
        "Adam with torch's default betas and eps, not the paper's",
        "lr=0.0, betas=(0.9, 0.98), eps=1e-9)",
        "lr=0.0)",
        "betas=(0.9, 0.98)",
    ),
    Bug(
        "training",
        "log_of_softmax",
        "log-probabilities as log(softmax): an underflowing probability gives -inf",
        "log_probs = torch.log_softmax(logits, dim=-1)",
        "log_probs = torch.log(torch.softmax(logits, dim=-1))",
        "log_softmax",
    ),
    Bug(
        "training",
        "zero_times_minus_inf",
        "q * log_probs summed as is: 0 * -inf = NaN where a logit is -inf and q is 0",
        "per_position = -torch.where(true_dist > 0, true_dist * log_probs, 0.0).sum(dim=-1)",
        "per_position = -(true_dist * log_probs).sum(dim=-1)",
        "0 * log 0 counts as 0",
    ),
    Bug(
        "training",
        "train_returns_a_list",
        "train returns the Python list of losses",
        "return torch.tensor(losses, dtype=torch.float64)",
        "return losses",
        "a float64 tensor of shape (steps,)",
    ),
    Bug(
        "training",
        "train_returns_float32",
        "train returns the losses as a float32 tensor",
        "return torch.tensor(losses, dtype=torch.float64)",
        "return torch.tensor(losses)",
        "a float64 tensor of shape (steps,)",
    ),
    Bug(
        "training",
        "learning_rate_returns_a_tensor",
        "learning_rate returns a 0-d float64 tensor",
        "    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)\n",
        "    return torch.tensor(factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5),\n"
        "                        dtype=torch.float64)\n",
        "a Python float (not a tensor)",
    ),
    Bug(
        "training",
        "loss_in_float64",
        "the loss is returned in float64 whatever the logits' dtype",
        "return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)",
        "return (per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)).double()",
        "a scalar of the logits' dtype",
    ),
]

# issue 33: train() must put the model in train mode, checked visibly
BUGS.append(
    Bug(
        "training",
        "train_without_model_train",
        "train() never calls model.train(): a model handed over in eval mode trains without dropout",
        "    ### BEGIN SOLUTION\n    model.train()\n",
        "    ### BEGIN SOLUTION\n",
        "call model.train() before the first step",
        caught_visibly=True,
    )
)

# issue 33: the smoothing mass spread over the other tokens, padding included
_SMOOTHING = "    true_dist = torch.full_like(log_probs, smoothing / (logits.size(-1) - 2))\n    true_dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)\n    true_dist[..., pad_id] = 0.0\n"
BUGS += [
    Bug(
        "training",
        "smoothing_over_v_minus_one_padding_included",
        "smoothing / (V - 1) on every token but the target, padding included",
        _SMOOTHING,
        "    true_dist = torch.full_like(log_probs, smoothing / (logits.size(-1) - 1))\n"
        "    true_dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)\n",
        "smoothing / (V - 2)",
    ),
    Bug(
        "training",
        "torch_style_smoothing",
        "torch's smoothing: smoothing / V on every token, the target's 1 - smoothing added on top",
        _SMOOTHING,
        "    true_dist = torch.full_like(log_probs, smoothing / logits.size(-1))\n"
        "    true_dist.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(log_probs[..., :1], 1.0 - smoothing))\n",
        mistake=TrainingMistake.TORCH_SMOOTHING,
    ),
]

# Two slips at once (teacher forcing with neither the shift nor the mask; a loss that ignores padding), and the
# schedule a step off
BUGS += [
    Bug(
        "training",
        "teacher_forcing_on_tgt_unmasked",
        "fed the decoder tgt itself with no target mask, as if the model had to copy it",
        "    decoder_input = shift_right(tgt, bos_id)\n"
        "    target_mask = causal_mask(tgt.size(1), device=tgt.device)\n"
        "    logits = model(src, decoder_input, padding_mask(src, pad_id), target_mask)\n",
        "    logits = model(src, tgt, padding_mask(src, pad_id))\n",
        mistake=TrainingMistake.NOT_SHIFTED | TrainingMistake.NO_CAUSAL_MASK,
    ),
    Bug(
        "training",
        "loss_ignores_padding",
        "the loss treats pad_id as an ordinary token: it keeps its smoothing mass and every position counts in the mean",
        "    true_dist[..., pad_id] = 0.0\n"
        "    # 0 * log 0 counts as 0: with smoothing = 0 a logit may be -inf where q is 0 (0 * -inf would be NaN)\n"
        "    per_position = -torch.where(true_dist > 0, true_dist * log_probs, 0.0).sum(dim=-1)  # (...)\n"
        "    real = target != pad_id\n"
        "    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)\n",
        "    # 0 * log 0 counts as 0: with smoothing = 0 a logit may be -inf where q is 0 (0 * -inf would be NaN)\n"
        "    per_position = -torch.where(true_dist > 0, true_dist * log_probs, 0.0).sum(dim=-1)  # (...)\n"
        "    return per_position.mean()\n",
        mistake=TrainingMistake.PAD_COUNTED | TrainingMistake.PAD_MASS,
    ),
    Bug(
        "training",
        "schedule_one_step_ahead",
        "added 1 to the step for the schedule as if enumerate counted from 0, but it starts at 1",
        'group["lr"] = learning_rate(step, d_model, warmup_steps, factor)',
        'group["lr"] = learning_rate(step + 1, d_model, warmup_steps, factor)',
        mistake=TrainingMistake.SCHEDULE_AHEAD,
    ),
    Bug(
        "training",
        "schedule_updated_after_the_step",
        "started Adam at learning_rate(1) and updated the rate after each step, like scheduler.step()",
        "    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)\n"
        "    losses = []\n"
        "    for step, (src, tgt) in enumerate(zip(src_batches, tgt_batches), start=1):\n"
        "        for group in optimizer.param_groups:\n"
        '            group["lr"] = learning_rate(step, d_model, warmup_steps, factor)\n'
        "        losses.append(train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing))\n",
        "    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate(1, d_model, warmup_steps, factor),\n"
        "                                 betas=(0.9, 0.98), eps=1e-9)\n"
        "    losses = []\n"
        "    for step, (src, tgt) in enumerate(zip(src_batches, tgt_batches), start=1):\n"
        "        losses.append(train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing))\n"
        "        for group in optimizer.param_groups:\n"
        '            group["lr"] = learning_rate(step, d_model, warmup_steps, factor)\n',
        mistake=TrainingMistake.SCHEDULE_BEHIND,
    ),
]
