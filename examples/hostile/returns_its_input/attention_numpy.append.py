# >>> hostile
# Placeholders that return their input unchanged (`return x`), the stub a student leaves while writing the rest:
# an invariance holds for the identity (an odd function, rows independent, a shift... ), so a property that
# compares the student's output with itself must also ask that the output is not its input where the expected
# output is not (free points, issue 11).
def softmax(x, axis=-1):
    return x


def layer_norm(x, eps=1e-5):
    return x


# <<< hostile
