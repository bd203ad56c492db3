"""The review summary of experiment results: per experiment, how many results are in each
review state. Pure: backends count ``(experimentId, status)`` groups, this folds them."""

from __future__ import annotations

from collections.abc import Iterable

from composite_store.records.experiments import ReviewSummary

__all__ = ["summarize_reviews"]

_FIELDS = {"needs-review": "needs_review", "reviewed": "reviewed", "complete": "complete"}


def summarize_reviews(groups: Iterable[tuple[str, str | None, int]]) -> list[ReviewSummary]:
    """Fold ``(experiment_id, status, count)`` groups into one summary per experiment.

    ``total`` counts every result, also those without a review status (or with a status this
    version does not know); the list is ordered by experiment id. Experiments without results
    do not appear.
    """
    counts: dict[str, dict[str, int]] = {}
    for experiment_id, status, count in groups:
        entry = counts.setdefault(
            experiment_id, {"total": 0, "needs_review": 0, "reviewed": 0, "complete": 0}
        )
        entry["total"] += count
        field = _FIELDS.get(status) if status is not None else None
        if field is not None:
            entry[field] += count
    return [
        ReviewSummary(experiment_id=experiment_id, **entry)
        for experiment_id, entry in sorted(counts.items())
    ]
