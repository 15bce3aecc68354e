"""TGI's /generate takes the prompt as text: it must be in the served model's own chat format."""

from agentsim.llm import chat_format
from agentsim.llm.base import Message


def test_smollm2_and_qwen_get_chatml_llama3_its_headers_and_an_unknown_model_the_plain_format() -> None:
    assert chat_format.format_for("HuggingFaceTB/SmolLM2-135M-Instruct") == "chatml"
    assert chat_format.format_for("Qwen/Qwen2.5-7B-Instruct") == "chatml"
    assert chat_format.format_for("meta-llama/Llama-3.1-8B-Instruct") == "llama3"
    assert chat_format.format_for("some-model") == "plain"
    messages = [Message("system", "Pick a name."), Message("user", "Answer now.")]
    prompt = chat_format.render(messages, "chatml")
    assert prompt.endswith("<|im_start|>assistant\n") and chat_format.parse(prompt) == messages
