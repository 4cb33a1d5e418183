"""The reference on CUDA: every component of solutions/ gives on a CUDA device what it gives on the CPU.

Skipped without a CUDA device (the kit's CI and its development machine have none). Where a GPU is lent,
benchmarks/cuda_check.sh runs this module there (docs/cuda.md). Each test builds its module on the CPU from a
fixed seed, copies it to the GPU, feeds both the same inputs (drawn on the CPU, then moved) and compares with
torch.testing.assert_close's defaults for the dtype, the tolerances of ../shared/notes/oracles.md: float32
(rtol 1.3e-6, atol 1e-5), float64 (1e-7, 1e-7). Decoding is compared in float64, where a near tie between two
tokens cannot flip between devices. Dropout draws different numbers on the two devices: modules are compared in
eval mode. attention_numpy is NumPy's and runs on the CPU only.

The grading itself is CPU-only by design (every expected value is computed on the CPU, constraints.txt pins
torch's CPU wheel); what is checked here of the checking side is what a student's GPU can reach: the by-hand
guard refuses a forbidden operator on a CUDA tensor too, and the Executor (the one door to the code under test)
carries out a call, forward and backward, on a module moved to the GPU.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch

from solutions import (
    add_norm,
    attention,
    beam_search,
    decoder,
    encoder,
    feed_forward,
    kv_cache,
    mask,
    multi_head,
    positional_encoding,
    training,
    transformer,
)

# KIT_TEST_DEVICE=cpu runs the module against a second CPU copy: a dry run of the tests themselves where no GPU is.
GPU = torch.device(os.environ.get("KIT_TEST_DEVICE", "cuda"))
pytestmark = pytest.mark.skipif(
    GPU.type == "cuda" and not torch.cuda.is_available(), reason="no CUDA device"
)
BOS, EOS, PAD = 1, 2, 0


@pytest.fixture(autouse=True)
def _exact_float32_matmul():
    """float32 matmuls in full precision (TF32 would round to 10 bits of mantissa: ~1e-3, not a device
    difference but a precision choice); restored after the test."""
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(saved)


def randn(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def tokens(*shape, seed=0, low=3, high=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g)


def to_gpu(value):
    """Tensors and modules (a deep copy) to the GPU, inside tuples, lists and dicts."""
    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value).to(GPU)
    if isinstance(value, torch.Tensor):
        return value.to(GPU)
    if isinstance(value, (tuple, list)):
        return type(value)(to_gpu(v) for v in value)
    if isinstance(value, dict):
        return {k: to_gpu(v) for k, v in value.items()}
    return value


def assert_same(on_gpu, on_cpu, exact=False):
    """The GPU's result is on the GPU and equals the CPU's (exactly for integers and booleans)."""
    if isinstance(on_cpu, (tuple, list)):
        assert len(on_gpu) == len(on_cpu)
        for g, c in zip(on_gpu, on_cpu):
            assert_same(g, c, exact)
        return
    if not isinstance(on_cpu, torch.Tensor):
        assert on_gpu == pytest.approx(on_cpu, rel=1e-7, abs=1e-7)
        return
    assert on_gpu.device.type == GPU.type, f"result on {on_gpu.device}"
    assert on_gpu.dtype == on_cpu.dtype
    if exact or not on_cpu.is_floating_point():
        assert torch.equal(on_gpu.cpu(), on_cpu)
    else:
        torch.testing.assert_close(on_gpu.cpu(), on_cpu)


def both(fn, *args, **kwargs):
    """fn on the CPU arguments and on their GPU copies; (gpu result, cpu result)."""
    on_cpu = fn(*args, **kwargs)
    return fn(*to_gpu(args), **to_gpu(kwargs)), on_cpu


def same_forward_and_backward(module, *inputs, dtype=torch.float32):
    """module(*inputs) on both devices: the outputs, then the gradients of the float inputs and of every
    parameter under one fixed cotangent."""
    module = module.to(dtype).eval()
    inputs = tuple(
        x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs
    )
    results = []
    for device in ("cpu", GPU):
        m = copy.deepcopy(module).to(device)
        xs = tuple(
            # a fresh leaf per device (.to("cpu") would return x itself, and the GPU copy of a leaf that
            # requires grad is no leaf: its .grad stays None)
            x.detach().to(device, copy=True).requires_grad_(x.is_floating_point())
            if isinstance(x, torch.Tensor)
            else x
            for x in inputs
        )
        out = m(*xs)
        out = out[0] if isinstance(out, tuple) else out
        (out * randn(*out.shape, seed=99, dtype=dtype).to(device)).sum().backward()
        grads = [x.grad for x in xs if isinstance(x, torch.Tensor) and x.is_floating_point()]
        results.append((out.detach(), grads, [p.grad for _, p in m.named_parameters()]))
    (out_c, in_c, par_c), (out_g, in_g, par_g) = results  # in the loop's order: the CPU first
    assert_same(out_g, out_c)
    assert_same(in_g, in_c)
    assert_same(par_g, par_c)


# ------------------------------------------------------------------------------------------ attention, masks
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_and_its_gradient_with_an_all_minus_inf_row(dtype):
    x = randn(3, 4, 7, dtype=dtype)
    x[1, 2] = float("-inf")  # an all -inf row: zeros, and no NaN in the gradient
    x[0, 1, :3] = float("-inf")

    def run(x):
        x = x.clone().requires_grad_(True)
        y = attention.softmax(x, dim=-1)
        (y * randn(*y.shape, seed=1, dtype=dtype).to(y.device)).sum().backward()
        return y.detach(), x.grad

    (y_g, grad_g), (y_c, grad_c) = both(run, x)
    assert_same(y_g, y_c)
    assert_same(grad_g, grad_c)
    assert not grad_g.isnan().any() and y_g[1, 2].eq(0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_scaled_dot_product_attention_with_a_fully_masked_row(dtype):
    q, k, v = (
        randn(2, 3, 5, 8, seed=1, dtype=dtype),
        randn(2, 3, 6, 8, seed=2, dtype=dtype),
        randn(2, 3, 6, 4, seed=3),
    )
    v = v.to(dtype)
    allowed = randn(2, 1, 5, 6, seed=4) > -0.5
    allowed[0, 0, 2] = False  # no key at all: zero weights, zero output
    assert_same(*both(attention.scaled_dot_product_attention, q, k, v, allowed))
    out, weights = attention.scaled_dot_product_attention(*to_gpu((q, k, v, allowed)))
    assert out[0, :, 2].eq(0).all() and weights[0, :, 2].eq(0).all()


def test_masks_are_made_on_the_device_asked_for():
    for device in (GPU.type, GPU, torch.device(GPU.type, 0)):
        m = mask.causal_mask(6, device=device)
        assert_same(m, mask.causal_mask(6), exact=True)
    assert_same(
        *both(mask.padding_mask, torch.tensor([[5, 3, 0, 0], [4, 0, 7, 0]]), PAD), exact=True
    )


# ------------------------------------------------------------------------------------------------- modules
def seeded(factory, *args, seed=0, **kwargs):
    torch.manual_seed(seed)
    return factory(*args, **kwargs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_multi_head_attention_with_its_weights(dtype):
    mha = seeded(multi_head.MultiHeadAttention, 16, 4).to(dtype).eval()
    q, kv = randn(2, 5, 16, seed=1, dtype=dtype), randn(2, 7, 16, seed=2, dtype=dtype)
    allowed = mask.padding_mask(torch.tensor([[3, 4, 5, 6, 7, 0, 0], [3, 4, 5, 6, 7, 8, 9]]), PAD)
    on_gpu = to_gpu(mha)
    assert_same(on_gpu(*to_gpu((q, kv, kv, allowed))), mha(q, kv, kv, allowed))
    assert_same(on_gpu.attention_weights, mha.attention_weights)
    same_forward_and_backward(mha, q, kv, kv, allowed, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_add_norm_and_feed_forward(dtype):
    x, sub = randn(3, 5, 16, seed=1, dtype=dtype) * 3 + 1, randn(3, 5, 16, seed=2, dtype=dtype)
    same_forward_and_backward(seeded(add_norm.LayerNorm, 16), x, dtype=dtype)
    same_forward_and_backward(seeded(add_norm.AddAndNorm, 16, dropout=0.1), x, sub, dtype=dtype)
    same_forward_and_backward(seeded(feed_forward.FeedForward, 16, 32, dropout=0.1), x, dtype=dtype)


def test_positional_encoding_and_embedding():
    pe = seeded(positional_encoding.PositionalEncoding, 16, max_len=60, dropout=0.1).eval()
    assert to_gpu(pe).pe.device.type == GPU.type  # a buffer: it moves with the module
    same_forward_and_backward(pe, randn(2, 9, 16, seed=1))
    emb = seeded(positional_encoding.TokenEmbedding, 11, 16)
    same_forward_and_backward(emb, tokens(2, 9))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_encoder_and_decoder_stacks(dtype):
    x, memory = randn(2, 6, 16, seed=1, dtype=dtype), randn(2, 5, 16, seed=2, dtype=dtype)
    src_mask = mask.padding_mask(torch.tensor([[3, 4, 5, 0, 0], [3, 4, 5, 6, 7]]), PAD)
    x_mask = mask.padding_mask(torch.tensor([[3, 4, 5, 6, 0, 0], [3, 4, 5, 6, 7, 8]]), PAD)
    same_forward_and_backward(seeded(encoder.EncoderLayer, 16, 4, 32, 0.1), x, x_mask, dtype=dtype)
    same_forward_and_backward(seeded(encoder.Encoder, 2, 16, 4, 32, 0.1), x, x_mask, dtype=dtype)
    causal = mask.causal_mask(6)
    same_forward_and_backward(
        seeded(decoder.DecoderLayer, 16, 4, 32, 0.1), x, memory, causal, src_mask, dtype=dtype
    )
    same_forward_and_backward(
        seeded(decoder.Decoder, 2, 16, 4, 32, 0.1), x, memory, causal, src_mask, dtype=dtype
    )


# ------------------------------------------------------------------------------------ the model and decoding
def model(dtype=torch.float64, seed=8, vocab=11, layers=2):
    """Seed 8: greedy decoding ends one row with eos at step 4 and runs the other to the end; beam 4 differs
    from greedy."""
    m = seeded(transformer.Transformer, vocab, vocab, 16, 4, layers, 32, 0.1, max_len=40, seed=seed)
    return m.to(dtype).eval()


def source():
    """Two rows, the first padded: (src, its padding mask)."""
    src = tokens(2, 7, seed=5)
    src[0, 5:] = PAD
    return src, mask.padding_mask(src, PAD)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transformer_forward_and_backward(dtype):
    src, src_mask = source()
    tgt = tokens(2, 6, seed=6)
    same_forward_and_backward(model(dtype), src, tgt, src_mask, mask.causal_mask(6), dtype=dtype)


def test_train_mode_dropout_runs_on_the_gpu():
    """The GPU draws its own dropout masks: outputs differ from eval mode's, and stay finite."""
    m, (src, src_mask) = to_gpu(model(torch.float32)), to_gpu(source())
    tgt = to_gpu(tokens(2, 6, seed=6))
    with torch.no_grad():
        evaluated = m(src, tgt, src_mask, mask.causal_mask(6, device=GPU))
        m.train()
        trained = m(src, tgt, src_mask, mask.causal_mask(6, device=GPU))
    assert trained.isfinite().all() and not torch.equal(trained, evaluated)


def test_greedy_decoding_is_the_same_and_is_its_own_fixed_point():
    m, (src, src_mask) = model(), source()
    ys_g, ys_c = both(transformer.greedy_decode, m, src, 12, BOS, EOS, src_mask)
    assert_same(ys_g, ys_c, exact=True)
    assert ys_g.size(1) == 12 and (ys_g == EOS).any()
    # the argmax of one teacher-forced pass over its own output is that output (oracles.md: decoding)
    gpu_model = to_gpu(m)
    with torch.no_grad():
        logits = gpu_model(
            to_gpu(src), ys_g[:, :-1], to_gpu(src_mask), mask.causal_mask(ys_g.size(1) - 1, GPU)
        )
    # after a row's eos: eos, whatever the logits say
    done = torch.cumsum(ys_g[:, :-1] == EOS, dim=1) > 0
    assert torch.equal(torch.where(done, EOS, logits.argmax(-1)), ys_g[:, 1:])


def test_kv_cache_steps_equal_the_full_model_and_cached_decoding_equals_greedy():
    m, (src, src_mask) = to_gpu(model()), to_gpu(source())
    tgt = to_gpu(tokens(2, 8, seed=7))
    with torch.no_grad():
        full = m(src, tgt, src_mask, mask.causal_mask(8, GPU))
        cache = kv_cache.CachedDecoder(m)
        cache.start(src, src_mask)
        # one token, then three at once, then the rest one by one
        pieces = [cache.step(tgt[:, :1]), cache.step(tgt[:, 1:4])]
        pieces += [cache.step(tgt[:, t : t + 1]) for t in range(4, 8)]
    assert cache.length == 8 and cache.self_keys[0].device.type == GPU.type
    torch.testing.assert_close(torch.cat(pieces, dim=1), full)
    cpu_model, (cpu_src, cpu_mask) = model(), source()
    cached = kv_cache.cached_greedy_decode(m, src, 12, BOS, EOS, src_mask)
    assert_same(
        cached, transformer.greedy_decode(cpu_model, cpu_src, 12, BOS, EOS, cpu_mask), exact=True
    )
    assert torch.equal(cached, transformer.greedy_decode(m, src, 12, BOS, EOS, src_mask))


def test_kv_cache_helpers():
    x = randn(2, 5, 16, seed=1, dtype=torch.float64)
    heads = kv_cache.split_heads(x, 4)
    assert_same(*both(kv_cache.split_heads, x, 4), exact=True)
    assert_same(*both(kv_cache.merge_heads, heads), exact=True)
    mha = seeded(multi_head.MultiHeadAttention, 16, 4).double().eval()
    keys, values = kv_cache.split_heads(mha.w_k(x), 4), kv_cache.split_heads(mha.w_v(x), 4)
    with torch.no_grad():
        assert_same(
            *both(kv_cache.attend, mha, x, keys.detach(), values.detach(), mask.causal_mask(5))
        )


@pytest.mark.parametrize("length_penalty", [0.0, 0.7])
def test_beam_search_is_the_same_and_beam_1_is_greedy(length_penalty):
    m, (src, src_mask) = model(), source()
    (seq_g, score_g), (seq_c, score_c) = both(
        beam_search.beam_search, m, src, 8, BOS, EOS, 4, length_penalty, src_mask
    )
    assert_same(seq_g, seq_c, exact=True)
    assert_same(score_g, score_c)
    gpu_model, gpu_src, gpu_mask = to_gpu(m), to_gpu(src), to_gpu(src_mask)
    one, _ = beam_search.beam_search(gpu_model, gpu_src, 8, BOS, EOS, 1, length_penalty, gpu_mask)
    greedy = transformer.greedy_decode(gpu_model, gpu_src, 8, BOS, EOS, gpu_mask)
    # beam 1 is greedy, up to the eos padding of a row that stopped early
    assert torch.equal(one[:, : greedy.size(1)], greedy)


# -------------------------------------------------------------------------------------------------- training
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_loss_and_teacher_forcing(dtype):
    logits, target = randn(3, 5, 9, seed=1, dtype=dtype) * 4, tokens(3, 5, seed=2, low=0, high=9)
    target[0, 3:] = PAD

    def loss(logits):
        logits = logits.clone().requires_grad_(True)
        value = training.label_smoothed_cross_entropy(logits, target.to(logits.device), 0.1, PAD)
        value.backward()
        return value.detach(), logits.grad

    assert_same(*both(loss, logits))
    assert_same(*both(training.shift_right, target, BOS), exact=True)
    src, _ = source()
    same_forward_and_backward(_TeacherForcing(model(dtype)), src, tokens(2, 6, seed=8), dtype=dtype)


class _TeacherForcing(torch.nn.Module):
    """teacher_forcing_loss as a module, to compare its value and the model's gradients."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, src, tgt):
        return training.teacher_forcing_loss(self.inner, src, tgt, BOS, PAD, 0.1)


def test_a_few_training_steps_of_the_copy_task():
    """train(): five Adam steps on the warm-up schedule, the same losses and weights on both devices (float64).
    Adam divides by the root of a running mean of squared gradients (eps 1e-9): a gradient that is zero in
    exact arithmetic (a key projection's bias: softmax ignores a shift of every score) but 1e-17 in floating
    point moves its weight by up to the learning rate. Measured on the CPU with the weights perturbed by 1e-13:
    such biases differ by 2e-11 after five steps and the losses by 5e-14 relative; after ten steps an embedding
    row drifts by 2e-8. Such a weight moves by about lr * 1e-16 / 1e-9 per step (5e-10 here) where a real update is
    ~5e-3. Hence five steps, the losses at float64's default tolerance, the weights at atol 1e-7."""
    from autograder.properties.training import COPY

    task = COPY
    m = seeded(transformer.Transformer, **task.config.kwargs()).double()
    src, tgt = task.data(1, 5, 16, noise=True, mapping=task.mapping(3))
    gpu_model = to_gpu(m)
    d_model = task.config.d_model
    losses_c = training.train(m, src, tgt, d_model, 10, BOS, PAD)
    losses_g = training.train(gpu_model, src.to(GPU), tgt.to(GPU), d_model, 10, BOS, PAD)
    assert losses_g.dtype == torch.float64 and losses_c.shape == (5,)
    torch.testing.assert_close(losses_g, losses_c)
    for (name, p_c), p_g in zip(m.named_parameters(), gpu_model.parameters()):
        assert p_g.device.type == GPU.type
        torch.testing.assert_close(p_g.detach().cpu(), p_c.detach(), rtol=1e-7, atol=1e-7, msg=name)
    assert gpu_model.training


# --------------------------------------------------------------------------------------- the checking side
def test_the_guard_refuses_a_forbidden_operator_on_a_cuda_tensor():
    """Its shadow kernels cover CUDA's dispatch key too: moving a tensor to the GPU is no way around the rule."""
    import torch.nn.functional as F

    from autograder import rules

    x = randn(2, 8).to(GPU)
    with pytest.raises(rules.ForbiddenCall), rules.guard("attention"):
        torch.softmax(x, -1)
    with pytest.raises(rules.ForbiddenCall), rules.guard("add_norm"):
        F.layer_norm(x, (8,))
    with rules.guard("attention"):  # what the component may use runs on the GPU, inside the guard
        allowed = torch.exp(x) @ x.T
    assert allowed.device.type == GPU.type
    assert_same(torch.softmax(x, -1), torch.softmax(x.cpu(), -1))  # outside a guard: torch's own


def test_the_executor_runs_a_module_moved_to_the_gpu(tmp_path):
    """A Build made on the CPU (the kit's operations carry no device), moved with a call of .to(): forward and
    backward run there, and the reply's gradients are the CPU's."""
    from autograder import KIT
    from autograder.student_code.executor import InProcessStudentCode
    from autograder.student_code.interface import Call

    student = InProcessStudentCode(KIT / "solutions", "reference on cuda")
    mha = seeded(multi_head.MultiHeadAttention, 16, 4).double()
    state = {k: v.clone() for k, v in mha.state_dict().items()}
    q = randn(2, 5, 16, seed=1, dtype=torch.float64)
    replies = []
    for device in ("cpu", GPU):
        handle = student.build(
            "multi_head",
            "MultiHeadAttention",
            state=state,
            dtype=torch.float64,
            d_model=16,
            num_heads=4,
        )
        student.method(handle, "to", device)
        x = q.to(device)
        replies.append(student.run(Call(handle, "forward", (x, x, x), seed=3, backward=True)))
    on_cpu, on_gpu = replies
    assert_same(on_gpu.value, on_cpu.value)
    assert_same(on_gpu.input_grads, on_cpu.input_grads)
    assert_same(
        [on_gpu.param_grads[k] for k in sorted(on_cpu.param_grads)],
        [on_cpu.param_grads[k] for k in sorted(on_cpu.param_grads)],
    )
    softmax = student.run(Call("attention", "softmax", (q.to(GPU),), backward=True))
    assert_same(
        softmax.input_grads[0],
        student.run(Call("attention", "softmax", (q,), backward=True)).input_grads[0],
    )
