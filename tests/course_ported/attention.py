import math

import torch


def softmax(x, dim=-1):
    maximo = torch.max(x, dim=dim, keepdim=True).values
    maximo = torch.where(torch.isinf(maximo), torch.zeros_like(maximo), maximo)
    exponencial = torch.exp(x - maximo)
    suma = torch.sum(exponencial, dim=dim, keepdim=True)
    return torch.where(suma > 0, exponencial / suma.clamp(min=1e-30), torch.zeros_like(exponencial))


def scaled_dot_product_attention(query, key, value, mask=None):
    key_traspuesta = key.transpose(-2, -1)
    producto = torch.matmul(query, key_traspuesta)
    escala = producto / math.sqrt(query.size(-1))
    if mask is not None:
        escala = escala.masked_fill(mask == 0, float("-inf"))
    matriz_atencion = softmax(escala, dim=-1)
    return torch.matmul(matriz_atencion, value), matriz_atencion
