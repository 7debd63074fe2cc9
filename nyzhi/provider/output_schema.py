"""``nyz run --output-schema FILE.json``: the final answer as JSON matching a schema.

Three parts, each where it belongs:

* ``load_schema`` reads and checks the file (one-line ``OutputSchemaError`` naming it);
* the wire adapters constrain the answer where their API can (OpenAI Chat ``response_format``
  ``json_schema``, Responses ``text.format``, Gemini ``responseMimeType`` + ``responseSchema``,
  Ollama ``format``); every format also gets the schema in the system prompt (``instruction``),
  which is all Anthropic's Messages API is given;
* ``check_answer`` validates the answer (jsonschema, imported only here) and says where it
  does not match, so the run can end with an error result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_NAME = "final_answer"


class OutputSchemaError(ValueError):
    """A schema file that cannot be used, or an answer that does not match it."""


def load_schema(path: str | Path) -> dict[str, Any]:
    """The JSON schema in ``path``, checked against its own meta-schema."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise OutputSchemaError(
            f"--output-schema {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise OutputSchemaError(f"--output-schema {path}: not JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise OutputSchemaError(f"--output-schema {path}: a schema is a JSON object")
    from jsonschema import SchemaError, validators

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise OutputSchemaError(f"--output-schema {path}: not a valid JSON schema: "
                                f"{exc.message}") from None
    return schema


def instruction(schema: dict[str, Any]) -> str:
    """What the system prompt says of the schema."""
    return ("\n\nWhen you give your final answer, give only a JSON document (no prose, no code "
            "fence) that matches this JSON schema:\n" + json.dumps(schema, indent=1))


def parse_answer(text: str) -> Any:
    """The answer's JSON, tolerating one surrounding Markdown code fence."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    return json.loads(body)


def check_answer(text: str, schema: dict[str, Any]) -> Any:
    """The answer as JSON when it matches ``schema``; ``OutputSchemaError`` saying where not."""
    try:
        value = parse_answer(text)
    except ValueError as exc:
        raise OutputSchemaError(f"the answer is not JSON ({exc})") from None
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the top level)"
        raise OutputSchemaError(f"the answer does not match the schema at {where}: {error.message}")
    return value
