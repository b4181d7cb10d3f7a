"""Query hints for the words a question writes one way and a page another: an initialism the
page spells out ("PPNE": "Property, plant and equipment — net") and a period written another
way ("Q2 of FY2024": "second quarter of fiscal 2024"). Built from the words themselves, no
list of names; `docchat.search.concepts.as_asked` counts what they find as held."""

from __future__ import annotations

import re

from docchat.search.terms import stem, terms, words

# A word written in capitals, two to five letters: an initialism ("PPNE", "SG&A", "R&D").
_INITIALISM = re.compile(r"(?<![\w&])([A-Z](?:&?[A-Z]){1,4})(?![\w&])")
# Words an initialism passes over or spells with one letter ("PP&E", "PPNE": property, plant
# and equipment).
_LINKS = {"and": ("", "n", "a"), "of": ("", "o"), "the": ("",), "for": ("", "f")}
_WORDS = re.compile(r"[A-Za-z]+")


def initialisms_held(question: str, text: str) -> set[str]:
    """The question's initialisms ("PPNE") that `text` spells out in full instead ("Property,
    plant and equipment"), each as the question's term (folded, as `terms` has it): the
    initials of consecutive words, "and" spelt "n" or "a" or left out, "of" and "the" too."""
    asked = _INITIALISM.findall(question)
    if not asked:
        return set()
    found: set[str] = set()
    held = [w.casefold() for w in _WORDS.findall(text)]
    for written in asked:
        wanted = written.replace("&", "").casefold()
        if wanted in held or all(t in held for t in terms(written)):
            continue
        if any(
            held[start] not in _LINKS and _spells(held, start, wanted) for start in range(len(held))
        ):
            found.update(terms(written))
    return found


def _spells(held: list[str], start: int, wanted: str) -> bool:
    """Whether the words from `start` on spell `wanted` by their initials."""
    if not wanted:
        return True
    if start >= len(held):
        return False
    word = held[start]
    if word in _LINKS:
        return any(
            wanted.startswith(letter) and _spells(held, start + 1, wanted[len(letter) :])
            for letter in _LINKS[word]
        )
    return word[0] == wanted[0] and _spells(held, start + 1, wanted[1:])


# Periods as questions write them and as pages print them: "Q2" / "second quarter", "FY2024" /
# "fiscal 2024", "H1" / "first half"; a question's word may hold two ("Q2FY24", "Q22023").
_ORDINALS = ("first", "second", "third", "fourth")
_PERIOD_WORD = re.compile(
    r"(?:(?:q([1-4])|([1-4])q)|h([12]))?'?(?:fy)?'?((?:19|20)?\d\d)?(?:q([1-4]))?"
)
_TOKEN = re.compile(r"[a-z0-9']+")
# A hyphen between words, which `words` joins ("1040-NR" is one word; "Fourth-Quarter" two).
_HYPHEN = re.compile(r"(?<=[A-Za-z])[-\u2010\u2011](?=[A-Za-z])")


def periods_held(question: str, text: str) -> set[str]:
    """The question's period words (as `terms` has them) that `text` writes another way: "Q2"
    held by "second quarter", "FY2024" by "fiscal 2024" (or "2024" in a table's header), "H1"
    by "first half" or "six months"; "Fourth-Quarter", as releases print it, too."""
    held = f" {' '.join(words(_HYPHEN.sub(' ', text)))} "
    found: set[str] = set()
    for token in _TOKEN.findall(question.casefold()):
        match = _PERIOD_WORD.fullmatch(token)
        if match is None or not any(match.groups()) or token.isdigit():
            continue
        quarter, quarter_before, half, year, quarter_after = match.groups()
        number = quarter or quarter_before or quarter_after
        if number:
            held_here = f" {stem(_ORDINALS[int(number) - 1])} quarte" in held
        elif half:
            held_here = (" first half" if half == "1" else " second half") in held or (
                half == "1" and " six month" in held
            )
        elif year and token.startswith("fy"):
            held_here = f" {year if len(year) == 4 else '20' + year} " in held
        else:
            continue
        if held_here:
            found.update(terms(token))
    return found
