"""One thinking setting for every model: ``off``, ``low``, ``medium``, ``high`` or a token budget.

Users say how hard the model should think once (``[agent] thinking``, ``nyz run --thinking``, a
role's ``thinking``, ``/thinking``); each model asks for it its own way, which the model table
records (``ModelInfo.thinking``). ``resolve_thinking`` fits a level to one model and says, in
one notice, when it had to change what was asked:

* a named level becomes the model's own budget or effort, always within its limits, silently;
* an explicit budget outside the model's documented range is clamped into it (notice);
* a model the table knows does not reason gets no parameter at all (notice);
* a model the table does not know gets the level as asked (its server judges it).

``off`` sends no thinking parameter, so models that always reason (OpenAI's o-series and GPT-5,
Gemini 2.5 Pro) reason at their provider's default.
"""

from __future__ import annotations

from nyzhi.config.thinking import Level
from nyzhi.provider.models import ModelInfo, model_info
from nyzhi.provider.types import ThinkingConfig

# A named level as a token budget, for models that take one (capped by the model's own maximum).
LEVEL_BUDGET = {"low": 4_096, "medium": 12_288, "high": 32_000}
EFFORTS = ("low", "medium", "high")
_ANSWER_ROOM = 4_096  # output tokens kept for the answer when thinking takes a budget


def effort_of(level: Level) -> str:
    """The effort nearest a level: a budget up to 4096 is low, up to 16384 medium, else high."""
    if isinstance(level, str):
        return level
    return "low" if level <= 4_096 else "medium" if level <= 16_384 else "high"


def resolve_thinking(level: Level | None, model: str | ModelInfo) -> tuple[ThinkingConfig | None, str | None]:
    """The ``ThinkingConfig`` to send for ``level`` on ``model`` (None: no parameter), and a
    notice when the level had to be changed to fit the model (None when it fits)."""
    if level is None or level == "off":
        return None, None
    info = model if isinstance(model, ModelInfo) else model_info(model)
    effort = effort_of(level)
    if not info.known:
        budget = level if isinstance(level, int) else LEVEL_BUDGET[level]
        return ThinkingConfig(enabled=True, budget_tokens=budget, effort=effort), None
    if info.thinking == "none":
        return None, f"thinking: {info.id} does not reason; thinking {level} is not sent to it"
    notice = None
    budget: int | None = None
    if info.thinking == "budget":
        budget, notice = _fit_budget(level, info)
    if info.efforts and effort not in info.efforts:
        nearest = _nearest_effort(effort, info.efforts)
        notice = f"thinking: {info.id} takes {', '.join(info.efforts)}; using {nearest}"
        effort = nearest
    interleaved = info.thinking == "budget" and _interleaves(info.id)
    config = ThinkingConfig(enabled=True, budget_tokens=budget, effort=effort,
                            mode=info.thinking, interleaved=interleaved)
    return config, notice


def _fit_budget(level: Level, info: ModelInfo) -> tuple[int, str | None]:
    top = info.thinking_max or max(info.max_output - _ANSWER_ROOM, 1)
    top = min(top, max(info.max_output - _ANSWER_ROOM, 1))
    low = max(info.thinking_min, 1)
    if isinstance(level, str):  # a name: the model's own range, no notice
        return max(low, min(LEVEL_BUDGET[level], top)), None
    if level > top:
        return top, f"thinking: {info.id} takes at most {top} thinking tokens; using {top}"
    if level < low:
        return low, f"thinking: {info.id} takes at least {low} thinking tokens; using {low}"
    return level, None


def _nearest_effort(effort: str, allowed: tuple[str, ...]) -> str:
    rank = {name: i for i, name in enumerate(EFFORTS)}
    want = rank.get(effort, 1)
    known = [a for a in allowed if a in rank] or list(allowed)
    return min(known, key=lambda a: (abs(rank.get(a, 1) - want), -rank.get(a, 1)))


def _interleaves(model_id: str) -> bool:
    """Claude 4 models think between tool calls when asked (a beta header); 3.7 cannot."""
    return model_id.startswith("claude-") and not model_id.startswith("claude-3")
