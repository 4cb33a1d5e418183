"""Call(count_macs=True): the multiply-adds of a call's matrix products, counted at torch's dispatcher (issue 10)."""

from pathlib import Path

import torch

from autograder.properties.strategies import mha_state
from autograder.student_code import Build, Call, InProcessStudentCode, MacCounter

ROOT = Path(__file__).resolve().parent.parent


def test_every_spelling_of_a_product_is_counted():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with MacCounter() as counter:
        (
            a @ b,
            torch.nn.functional.linear(a, b.T),
            torch.einsum("ij,jk->ik", a, b),
            a[None] @ b[None],
        )
    assert counter.macs == 4 * 3 * 4 * 5


def test_a_call_reports_its_work_and_a_plain_call_none():
    student = InProcessStudentCode(ROOT / "solutions", "reference")
    d, h, batch, m_q, m_k = 8, 2, 2, 3, 5
    mha = student.run(
        Build(
            "multi_head",
            "MultiHeadAttention",
            {"d_model": d, "num_heads": h},
            state=mha_state("", d, 1, torch.float32),
        )
    ).value
    q, kv = torch.randn(batch, m_q, d), torch.randn(batch, m_k, d)
    reply = student.run(Call(mha, "forward", (q, kv, kv), count_macs=True))
    # w_q, w_o on the queries; w_k, w_v on the keys
    projections = batch * (2 * m_q + 2 * m_k) * d * d
    # scores, and weights @ v twice (attention's output and the heads)
    attention = 3 * batch * m_q * m_k * d
    assert reply.macs == projections + attention
    assert student.run(Call(mha, "forward", (q, kv, kv))).macs is None
