"""What the `docchat` command shows of documents: names that cannot pass for other names."""

from __future__ import annotations

# Unicode's Bidi_Control characters (ALM, LRM, RLM, the embeddings and overrides, the isolates),
# with which "report\u202egnp.pdf" reads as "reportfdp.png", and the C0 and C1 controls, which a
# terminal obeys (an escape sequence, a line break in a name). The page shows them the same way
# (docchat/web/names.js).
_CONTROLS = [
    *range(0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_ESCAPES = {code: f"<U+{code:04X}>" for code in _CONTROLS}


def shown(text: str) -> str:
    """`text` as a terminal may print it: each bidirectional control or control character as a
    visible <U+XXXX>. Escaped, not removed: a stripped name would look harmless and differ from
    the file's real name without a sign; the escape says what the name holds."""
    return text.translate(_ESCAPES)
