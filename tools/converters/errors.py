"""What every converter reports: one error type, raised with one line that names
the culprit (tessera-convert prints it after "error: " and exits 1), and notes
(one line each on stderr) for what converts but deserves a word."""

import sys

PROG = "tessera-convert"


class ConvertError(ValueError):
    """A problem with the user's input, reported as one line."""


def note(message):
    print("%s: note: %s" % (PROG, message), file=sys.stderr)


def one_line(error):
    """An exception's message with its whitespace runs (newlines too) as one space."""
    return " ".join(str(error).split())


def note_unused(note, unused, shown=3):
    """The one note of a conversion's left-out input tensors (names in order)."""
    if unused:
        note("%d tensor(s) not used by tessera left out: %s%s"
             % (len(unused), ", ".join(unused[:shown]), ", ..." if len(unused) > shown else ""))
