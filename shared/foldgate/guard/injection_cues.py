"""The cue words of the result guard's injection side: without one of them in a text, no passage of it
gives the model an order the rules know (:data:`ORDER_CUES`), nor names the model for the scorer to read
(:data:`ADDRESS_CUES`). Lower-case substrings, looked for in one pass over the lower-cased text with the
credential detectors' gates (:mod:`foldgate.guard.gates`); :mod:`foldgate.guard.injection` reads the
passages around the ones present.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ADDRESS_CUES", "ORDER_CUES"]

ORDER_CUES: Final[tuple[str, ...]] = (
    "ignor", "disregard", "forget", "instruction", "override", "bypass", "you must", "you are now",
    "your task", "your new", "your real", "your only", "your primary", "your goal", "your prompt",
    "do not tell", "don't tell", "do not mention", "do not reveal", "never tell", "never mention",
    "secretly", "silently", "without telling", "without asking", "<im_", "[inst", "<important",
    "important:", "important for", "attention:", "<system", "[system", "system:", "system message",
    "system prompt", "## system", "## new", "## admin", "## developer", "## assistant", "## instruction",
    "if you are a", "reading this", "processing this", "before you", "before answering",
    "before responding", "before using", "before calling", "first call", "first, call", "exfiltrat",
    "send the", "send all", "send it", "send them", "send your", "send this", "forward the",
    "forward all", "forward it", "upload the", "upload all", "email the", "post the", "transfer the",
)  # fmt: skip
# Words naming the model: with a scorer, a passage holding one is read by it too (a learned model may
# see an order in words no rule has). Stems that cover the model's names in other Latin-script
# languages too ("sist": assistant, asistente, assistente, Assistent; " ia"/" ki": IA, KI; "asyst":
# asystent). Orders in those languages come with such a name, and "ignor" (ignora, ignorez,
# ignoriere) is an order cue already.
ADDRESS_CUES: Final[tuple[str, ...]] = (
    "sist", "asyst", " ai ", " ai:", " ai,", "ai-", "(ai", " ia ", " ia:", " ia,", "l'ia", " ki ", " ki:",
    " ki,", "llm", "agent", "model", "claude", "gpt", "chatbot", "copilot", "system", "quietly",
)  # fmt: skip
