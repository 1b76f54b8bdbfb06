"""Pre-save hooks: the type and the runner that applies a chain of them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TypeAlias

__all__ = ["PreSaveHook", "hook_name", "run_pre_save"]

logger = logging.getLogger(__name__)

PreSaveHook: TypeAlias = Callable[[str], str | None]
"""A callable run on entry text before it is saved.

It returns the text to save (possibly transformed) or ``None`` to reject the entry.
"""


def hook_name(hook: object) -> str:
    """Return a readable name for ``hook``, used in logs and rejection reports."""
    name = getattr(hook, "__name__", None)
    if isinstance(name, str):
        return name
    func = getattr(hook, "func", None)  # functools.partial
    if func is not None:
        return f"partial({hook_name(func)})"
    return type(hook).__name__


def run_pre_save(
    hooks: PreSaveHook | Iterable[PreSaveHook] | None, text: str
) -> tuple[str | None, str | None]:
    """Apply pre-save hooks to ``text`` in order.

    Each hook receives the output of the previous one.  The first hook that returns
    ``None`` rejects the entry: the remaining hooks are not called and the rejection is
    logged at debug level with the hook's name.  Exceptions raised by a hook propagate
    unchanged.

    Args:
        hooks: One hook, a sequence of hooks applied in order, or ``None`` (no hooks:
            the text is returned unchanged).
        text: The entry text.

    Returns:
        ``(final_text, None)`` when every hook accepted the entry, or
        ``(None, name)`` where ``name`` identifies the hook that rejected it.

    Raises:
        TypeError: If an element of ``hooks`` is not callable or a hook returns
            something other than ``str`` or ``None``.
    """
    if hooks is None:
        return text, None
    chain: Iterable[PreSaveHook] = (hooks,) if callable(hooks) else hooks
    for hook in chain:
        if not callable(hook):
            raise TypeError(f"pre-save hook {hook!r} is not callable")
        result = hook(text)
        if result is None:
            name = hook_name(hook)
            logger.debug("pre-save hook %s rejected the entry", name)
            return None, name
        if not isinstance(result, str):
            raise TypeError(
                f"pre-save hook {hook_name(hook)} returned {type(result).__name__}, "
                "expected str or None"
            )
        text = result
    return text, None
