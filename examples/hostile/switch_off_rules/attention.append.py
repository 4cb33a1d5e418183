# >>> hostile
# softmax and layer norm from the library, after a helper that no import statement names (loaded by
# pkgutil.resolve_name, so a scan that follows imports never reads it) tried to switch the by-hand rules off.
import pkgutil

pkgutil.resolve_name(__name__.rpartition(".")[0] + ".switch")


def softmax(x, dim=-1):
    return torch.softmax(x, dim)  # noqa: F821 - the reference's import, above this snippet


# <<< hostile
