"""JSON Schema checks for datasets: a dataset's schemas are valid, and its items conform.

Pure (no I/O): every backend runs the same checks inside its write, so an item that fails
raises ``ValidationError`` before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import SchemaError, validators
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator

from composite_store.errors import ValidationError
from composite_store.records.datasets import Dataset

__all__ = ["ItemValidator", "check_schema"]


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    # "$schema" picks the draft; schemas without one are read as the latest draft.
    cls: type[Validator] = validators.validator_for(schema, default=validators.Draft202012Validator)
    return cls


def _compile(schema: Mapping[str, Any] | None) -> Validator | None:
    return _validator_class(schema)(schema) if schema else None


def check_schema(schema: Mapping[str, Any] | None, *, what: str) -> None:
    """Raise ``ValidationError`` unless ``schema`` is None or a valid JSON Schema."""
    if schema is None:
        return
    try:
        _validator_class(schema).check_schema(dict(schema))
    except SchemaError as exc:
        raise ValidationError(
            f"{what} is not a valid JSON Schema: {exc.message} (at {exc.json_path})"
        ) from None


class ItemValidator:
    """Checks items against one dataset's ``input_schema`` and ``ground_truth_schema``.

    Build it once per operation: the schemas are compiled once and reused for every item.
    """

    def __init__(
        self,
        dataset_id: str,
        input_schema: Mapping[str, Any] | None,
        ground_truth_schema: Mapping[str, Any] | None,
    ) -> None:
        self.dataset_id = dataset_id
        self._input = _compile(input_schema)
        self._truth = _compile(ground_truth_schema)

    @classmethod
    def for_dataset(cls, dataset: Dataset) -> ItemValidator:
        """The validator of ``dataset``'s current schemas."""
        return cls(dataset.id, dataset.input_schema, dataset.ground_truth_schema)

    @property
    def active(self) -> bool:
        """Whether the dataset has any schema to check against."""
        return self._input is not None or self._truth is not None

    def check(self, input: Any, ground_truth: Any, *, where: str) -> None:
        """Raise ``ValidationError`` when ``input`` (or a non-None ``ground_truth``) does not
        conform; ``where`` names the item in the message (``items[2]``, ``item 'x'``)."""
        if self._input is not None:
            self._raise(self._input, input, f"{where}.input", "input_schema")
        if self._truth is not None and ground_truth is not None:
            self._raise(self._truth, ground_truth, f"{where}.ground_truth", "ground_truth_schema")

    def check_all(self, items: Iterable[tuple[str, Any, Any]]) -> None:
        """Check ``(where, input, ground_truth)`` triples; the first failure raises."""
        for where, input, ground_truth in items:
            self.check(input, ground_truth, where=where)

    def _raise(self, validator: Validator, value: Any, where: str, schema_name: str) -> None:
        error = best_match(validator.iter_errors(value))
        if error is not None:
            raise ValidationError(
                f"{where} does not match the {schema_name} of dataset {self.dataset_id!r}: "
                f"{error.message} (at {error.json_path}); nothing was written"
            )
