"""Schema-mode working memory: the JSON Schema, validation, and the stored JSON text."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import pydantic
from pydantic import BaseModel

from composite_store.errors import ValidationError
from composite_store.records.base import validation_error
from composite_store.records.json import compact_json

__all__ = ["MemorySchema", "dump_object", "parse_object"]

JsonObject = dict[str, Any]


class MemorySchema:
    """A compiled working-memory schema: what the model is shown and what a write must pass.

    Built from a pydantic model class (validated by pydantic; the stored object is the model's
    JSON dump of the fields that were given) or from a JSON Schema dict (validated by
    ``jsonschema`` with the draft its ``$schema`` names, 2020-12 by default; stored as given).
    """

    def __init__(
        self, json_schema: JsonObject, validate: Callable[[JsonObject], JsonObject]
    ) -> None:
        self._json_schema = json_schema
        self._validate = validate

    @classmethod
    def from_source(cls, source: type[BaseModel] | Mapping[str, Any]) -> MemorySchema:
        """Compile a pydantic model class or a JSON Schema dict; raise ``ValidationError``
        when it is neither, is not a valid JSON Schema, or does not describe an object."""
        if isinstance(source, type) and issubclass(source, BaseModel):
            return cls(source.model_json_schema(), _pydantic_validator(source))
        if isinstance(source, Mapping):
            schema = copy.deepcopy(dict(source))
            return cls(schema, _jsonschema_validator(schema))
        raise ValidationError(
            f"schema must be a pydantic model class or a JSON Schema dict, "
            f"got {type(source).__name__}"
        )

    @property
    def json_schema(self) -> JsonObject:
        """The JSON Schema of the memory object (a fresh copy)."""
        return copy.deepcopy(self._json_schema)

    def validate(self, value: JsonObject) -> JsonObject:
        """Return ``value`` as it will be stored, or raise ``ValidationError`` listing every
        problem."""
        return self._validate(value)


def _pydantic_validator(model: type[BaseModel]) -> Callable[[JsonObject], JsonObject]:
    def validate(value: JsonObject) -> JsonObject:
        try:
            instance = model.model_validate(value)
        except pydantic.ValidationError as exc:
            raise validation_error(exc, "working memory") from exc
        # Only the fields present are kept: defaults the model never sent are not memory.
        return instance.model_dump(mode="json", by_alias=True, exclude_unset=True)

    return validate


def _jsonschema_validator(schema: JsonObject) -> Callable[[JsonObject], JsonObject]:
    declared = schema.get("type")
    if declared is not None and declared != "object":
        raise ValidationError(
            f"the working memory schema must describe a JSON object (type 'object'), "
            f"got type {declared!r}"
        )
    validator_cls = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    try:
        validator_cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ValidationError(
            f"the working memory schema is not a valid JSON Schema: {exc.message} "
            f"(at {exc.json_path})"
        ) from exc
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)

    def validate(value: JsonObject) -> JsonObject:
        errors = sorted(validator.iter_errors(value), key=lambda e: e.json_path)
        if errors:
            listed = "; ".join(f"{_path(e)}: {e.message}" for e in errors)
            raise ValidationError(f"invalid working memory: {listed}")
        return value

    return validate


def _path(error: jsonschema.exceptions.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(root)"


def parse_object(value: object, *, what: str) -> JsonObject:
    """Return ``value`` as a JSON object: a dict, or JSON text of an object.

    Raises ``ValidationError`` naming ``what`` otherwise.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValidationError(f"{what} is not valid JSON: {exc}") from exc
    if not isinstance(value, Mapping):
        raise ValidationError(
            f"{what} must be a JSON object, got {type(value).__name__}"
        )
    return dict(value)


def dump_object(value: JsonObject) -> str:
    """Compact JSON text, as Mastra stores schema-mode memory (``JSON.stringify``)."""
    try:
        return compact_json(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"working memory is not JSON-serialisable: {exc}") from exc
