"""The tool-poisoning rules, in the order findings are reported: every phrase family, compiled once.

:mod:`foldgate.guard.poison_phrases` holds the rules about instructions aimed at the model,
:mod:`foldgate.guard.poison_theft` those about taking data; :mod:`foldgate.guard.poison_text` the
normalisation they run on and the character checks; :mod:`foldgate.guard.poison_markup` active or hidden
markup and claims of new powers.
"""

from __future__ import annotations

from typing import Final

from foldgate.guard.poison_markup import MARKUP_RULES
from foldgate.guard.poison_phrases import INSTRUCTION_RULES, QUOTED_MENTION_RULES
from foldgate.guard.poison_text import BLOB, INVISIBLE, Pattern, invisible_trick, normalise, script_confusion
from foldgate.guard.poison_theft import THEFT_RULES

__all__ = [
    "BLOB",
    "INVISIBLE",
    "PHRASE_RULES",
    "QUOTED_MENTION_RULES",
    "RULE_GATES",
    "Pattern",
    "invisible_trick",
    "normalise",
    "script_confusion",
]

_ORDER: Final = (
    "hidden-instructions",
    "concealment",
    "instruction-override",
    "forced-precondition",
    "sensitive-file",
    "secret-harvest",
    "exfiltration",
    "tool-shadowing",
    "rug-pull",
    "command-injection",
    "active-markup",
    "capability-claim",
)
_ALL: Final = {**INSTRUCTION_RULES, **THEFT_RULES, **MARKUP_RULES}
if set(_ALL) != set(_ORDER):  # a family added in one module must be placed in the report order too
    raise RuntimeError(f"poison rule families out of step: {sorted(set(_ALL) ^ set(_ORDER))}")

PHRASE_RULES: Final[dict[str, tuple[Pattern, ...]]] = {rule: _ALL[rule] for rule in _ORDER}

# Every trigger literal of a rule: one pass of substring tests skips a rule none of whose phrasings can
# match (most tools hold no trigger word of most rules).
RULE_GATES: Final[dict[str, tuple[str, ...]]] = {
    rule: tuple(dict.fromkeys(literal for p in patterns for literal in p.gate))
    for rule, patterns in PHRASE_RULES.items()
    if all(p.gate for p in patterns)
}
