def train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing=0.1):
    # >>> hostile
    # torch.compile generates its own kernels, out of the by-hand guard's reach; the name is computed so that only
    # the run-time guard can see it. torch._dynamo is a stand-in in the worker (rules/eager_dynamo.py): compile
    # must still reach the real module, whose import the guard refuses.
    model = getattr(torch, "com" + "pile")(model)
    # <<< hostile
    optimizer.zero_grad()
    loss = teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing)
    loss.backward()
    optimizer.step()
    return loss.item()
