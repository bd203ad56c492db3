"""Folding review-status counts into summaries (``composite_store.rules.review``)."""

from __future__ import annotations

from composite_store.records.experiments import ReviewSummary
from composite_store.rules.review import summarize_reviews


def test_counts_per_experiment_and_status() -> None:
    groups = [
        ("e2", "complete", 1),
        ("e1", "needs-review", 2),
        ("e1", "reviewed", 3),
        ("e1", None, 4),
        ("e1", "complete", 5),
    ]
    assert summarize_reviews(groups) == [
        ReviewSummary(experiment_id="e1", total=14, needs_review=2, reviewed=3, complete=5),
        ReviewSummary(experiment_id="e2", total=1, needs_review=0, reviewed=0, complete=1),
    ]


def test_unknown_status_counts_only_in_total() -> None:
    (summary,) = summarize_reviews([("e", "escalated", 2), ("e", "reviewed", 1)])
    assert (summary.total, summary.reviewed, summary.needs_review, summary.complete) == (3, 1, 0, 0)


def test_split_groups_of_one_status_add_up() -> None:
    (summary,) = summarize_reviews([("e", "reviewed", 1), ("e", "reviewed", 2)])
    assert summary.reviewed == 3 and summary.total == 3


def test_no_results_no_summaries() -> None:
    assert summarize_reviews([]) == []


def test_stored_names_are_mastras() -> None:
    (summary,) = summarize_reviews([("e", "needs-review", 1)])
    assert summary.stored() == {
        "experimentId": "e", "total": 1, "needsReview": 1, "reviewed": 0, "complete": 0,
    }
