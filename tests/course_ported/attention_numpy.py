"""Atención y normalización de capa con NumPy, antes de pasar a torch."""

import numpy as np


def softmax(x, axis=-1):
    # restar el máximo de cada fila para que exp no se desborde
    desplazado = x - np.max(x, axis=axis, keepdims=True)
    e_x = np.exp(desplazado)
    return e_x / np.sum(e_x, axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    res = np.dot(Q, K.swapaxes(-1, -2)) / np.sqrt(K.shape[-1])
    if mask is not None:
        res = np.where(mask, res, -np.inf)
    pesos = softmax(res, axis=-1)
    pesos = np.nan_to_num(pesos)
    return np.matmul(pesos, V), pesos


def layer_norm(x, gamma=None, beta=None, epsilon=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    normalized = (x - mean) / np.sqrt(variance + epsilon)
    if gamma is not None:
        normalized = normalized * gamma
    if beta is not None:
        normalized = normalized + beta
    return normalized


if __name__ == "__main__":
    np.random.seed(42)
    corpus = np.around(np.random.rand(3, 3), 3)
    W_Q, W_K, W_V = (np.around(np.random.rand(3, 3), 3) for _ in range(3))
    Q, K, V = corpus.copy() @ W_Q, corpus.copy() @ W_K, corpus.copy() @ W_V
    salida, pesos = scaled_dot_product_attention(Q, K, V)
    print(f"Sum = {np.sum(pesos, axis=-1)}")
    print(np.around(layer_norm(salida), 4))
