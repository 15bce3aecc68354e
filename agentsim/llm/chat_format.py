"""Chat messages as one prompt string, for TGI's native `/generate`, which takes raw text.

The format follows the served model (read once from TGI's `/info`): Llama 3's header tokens,
ChatML for Qwen-style and SmolLM models, and a plain tagged format otherwise (the stand-in server reads
all three back).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Message


def format_for(model_id: str) -> str:
    lowered = model_id.lower()
    if "llama-3" in lowered or "llama3" in lowered:
        return "llama3"
    if "qwen" in lowered or "chatml" in lowered or "smollm" in lowered:
        return "chatml"
    return "plain"


def render(messages: Sequence[Message], style: str) -> str:
    if style == "llama3":
        body = "".join(f"<|start_header_id|>{m.role}<|end_header_id|>\n\n{m.content}<|eot_id|>" for m in messages)
        return "<|begin_of_text|>" + body + "<|start_header_id|>assistant<|end_header_id|>\n\n"
    if style == "chatml":
        return "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"
    return "".join(f"<|{m.role}|>\n{m.content}\n" for m in messages) + "<|assistant|>\n"


def parse(prompt: str) -> list[Message]:
    """The messages back from a rendered prompt, whichever of the three styles it is in."""
    import re

    if "<|start_header_id|>" in prompt:
        found = re.findall(r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)<\|eot_id\|>", prompt, re.S)
    elif "<|im_start|>" in prompt:
        found = re.findall(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", prompt, re.S)
    else:
        found = re.findall(r"<\|(system|user|assistant)\|>\n(.*?)\n(?=<\|(?:system|user|assistant)\|>)", prompt, re.S)
    return [Message(role, content) for role, content in found]
