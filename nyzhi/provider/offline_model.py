"""What nyz knows about its own offline model (SmolLM2-135M on llama.cpp), in one light
module: the agent factory fences the offline model's tools with it and the llama.cpp adapter
shapes its requests with it, and neither should pay for the other's imports.
"""

from __future__ import annotations

#: The model name nyz's own offline server answers to (``--model_alias``): SmolLM2-135M.
OFFLINE_MODEL = "smollm2-135m-instruct"

#: The only tools the offline model is offered (and named in its prompt). Every offered tool's
#: parameter schema goes into its prompt: all ~30 of them are ~2,300 tokens, which this model
#: reads at ~50 tokens per CPU-second on the 2-core machine it was measured on (most of a
#: minute before it says a word) and cannot use anyway. These few let it look around.
OFFLINE_TOOLS = ("list_dir", "read", "glob", "grep")

#: Its sampling temperature unless configured: at the server's default (0.8) a 135M model
#: rambles; the repetition guard catches the loops a low temperature can fall into.
OFFLINE_TEMPERATURE = 0.2


def is_offline_model(model: str | None) -> bool:
    """Whether ``model`` names nyz's offline model (its alias included)."""
    return (model or "").strip().lower() in (OFFLINE_MODEL, "smollm2-135m", "smollm2")
