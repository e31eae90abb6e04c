"""Terminal escapes out of a check's output: what a terminal would leave of it, as plain text.

Pure string functions; the same text gives the same result.
"""

from __future__ import annotations

import re

__all__ = ["strip_ansi"]

# One regex: its first item is a character class, which lets the engine skip plain text fast
# (a log of megabytes has few escapes); what follows each escape character decides its length.
_ESCAPES = re.compile(
    r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]"  # C0 controls but \t \n \r and backspace; ESC; C1
    r"(?:(?<=\x1b)(?:\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI, private modes (ESC[?25l) included
    r"|[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC DCS SOS PM APC, ended by BEL or ST
    r"|[\x20-\x2f]+[\x30-\x7e]"  # nF: charset selection ESC ( B, ESC # 8
    r"|[\x30-\x7e])?"  # other two-char escapes (ESC 7, ESC =, ESC M); else a lone ESC
    r"|(?<=\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # 8-bit CSI
    r"|(?<=[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?)?"  # 8-bit OSC DCS SOS PM APC
)


def strip_ansi(text: str) -> str:
    """`text` as a terminal would leave it, without any escape or control sequence.

    Removes CSI (colours, cursor moves, private modes), OSC (titles, hyperlinks; ended by
    BEL or ST), DCS/SOS/PM/APC strings, charset selections, other ESC pairs and stray
    C0/C1 controls. A line redrawn with `\\r` (progress bars) keeps its final state, the
    last non-empty redraw; backspaces erase the character before them. Newlines and tabs
    stay, so line numbers stay true.
    """
    text = _ESCAPES.sub("", text.replace("\r\n", "\n"))
    if "\r" in text:
        text = "\n".join(_final_redraw(line) for line in text.split("\n"))
    if "\x08" in text:
        text = "\n".join(_apply_backspaces(line) for line in text.split("\n"))
    return text


def _final_redraw(line: str) -> str:
    if "\r" not in line:
        return line
    for part in reversed(line.split("\r")):
        if part.strip():
            return part
    return ""


def _apply_backspaces(line: str) -> str:
    if "\x08" not in line:
        return line
    out: list[str] = []
    for ch in line:
        if ch != "\x08":
            out.append(ch)
        elif out:
            out.pop()
    return "".join(out)
