"""Names from a run directory shown on a terminal as text, never as commands to it.

Folder names, member ids, condition labels and the paths that hold them come from whoever
made the directory. A name may hold an escape sequence (``ESC ] 0 ; ... BEL`` retitles the
terminal, ``ESC [ 2 J`` clears it) or a newline that forges a line of output. Everything the
command line prints about them goes through :func:`shown`, which writes every character a
terminal could act on as Python's ``repr`` would (``\\x1b``, ``\\n``, ``\\u202e``).
"""

from __future__ import annotations

import logging

__all__ = ["EscapingFormatter", "error_line", "shown", "shown_lines"]


def shown(text: object) -> str:
    """``str(text)`` with each non-printable character (controls, line breaks, bidi marks)
    written as an escape, the way ``repr`` writes it."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in value)


def shown_lines(text: str) -> str:
    """Several lines of text (a report, a table): each line as :func:`shown` shows it."""
    return "\n".join(shown(line) for line in text.split("\n"))


def error_line(message: object) -> str:
    """``error: <message>`` on one line: white space runs become one space, the rest is shown
    as :func:`shown` shows it."""
    return f"error: {shown(' '.join(str(message).split()))}"


class EscapingFormatter(logging.Formatter):
    """A log formatter whose lines show names as :func:`shown` does (line breaks between the
    lines of a message, a traceback's included, are kept)."""

    def format(self, record: logging.LogRecord) -> str:
        return shown_lines(super().format(record))
