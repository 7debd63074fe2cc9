"""The search APIs ``web_search`` can ask, by name: kept apart from the tool so that the
environment policy (which keeps their key variables from child processes) reads them at
start-up without importing the tool."""

from __future__ import annotations

from nyzhi import records


@records.frozen
class Backend:
    """One search API: its default base URL and the variable its key is read from (None:
    keyless)."""

    name: str
    base: str | None
    key_var: str | None


BACKENDS: dict[str, Backend] = {
    "searxng": Backend("searxng", None, None),
    "brave": Backend("brave", "https://api.search.brave.com", "BRAVE_API_KEY"),
    "tavily": Backend("tavily", "https://api.tavily.com", "TAVILY_API_KEY"),
    "exa": Backend("exa", "https://api.exa.ai", "EXA_API_KEY"),
}
