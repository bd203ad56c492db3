"""Template-mode working memory: the default Markdown template and the empty-template guard."""

from __future__ import annotations

import re

__all__ = ["DEFAULT_TEMPLATE", "normalize_whitespace", "overwrites_with_empty"]

#: The template used when ``WorkingMemoryConfig`` names neither a template nor a schema.
DEFAULT_TEMPLATE = """\
# User Profile
- **Name**:
- **Location**:
- **Time zone**:
- **Occupation**:
- **Interests**:
- **Goals**:
- **Important facts**:
"""

_WHITESPACE = re.compile(r"\s+")


def normalize_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends.

    Models re-indent and re-wrap text freely, so comparisons with the template ignore layout.
    """
    return _WHITESPACE.sub(" ", text).strip()


def overwrites_with_empty(new: str, existing: str | None, template: str) -> bool:
    """Whether writing ``new`` would replace real memory with nothing.

    True when ``new`` is blank or is the bare ``template`` (whitespace aside) while ``existing``
    holds something other than the bare template. Models sometimes answer with the empty
    template after losing track of the memory; accepting that would erase what was learned.
    """
    if existing is None or not existing.strip():
        return False
    empty = normalize_whitespace(template)
    candidate = normalize_whitespace(new)
    if candidate and candidate != empty:
        return False
    return normalize_whitespace(existing) != empty
