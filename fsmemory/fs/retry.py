"""The one retry policy of the network roots: backoff, a total deadline, and honest
handling of writes whose outcome is unknown.

A failed call is retried only when the failure is *transient*
(:func:`fsmemory.fs.errors.is_transient`: a timeout, a reset connection, HTTP
408/429/5xx) and only when the operation is safe to repeat:

* **idempotent operations** (reads, ``stat``, listings, deletes, unconditional writes)
  are run again (:meth:`RetryPolicy.call`; :func:`idempotent` on a root method);
* **conditional writes** go through :meth:`RetryPolicy.write`, which *probes* the object
  after an ambiguous failure (the write may have landed before the reply was lost):
  this very write there -> its version is returned; the expected version still there
  (or no object, for create-only) -> sent again; anything else -> another writer won,
  :class:`~fsmemory.errors.ConflictError`. How a probe recognises "this very write" is
  the root's business: the object stores read back a random marker the write carries
  in its metadata (exact); Redis and other roots compare the content, exact when the
  bytes are unique to the writer (fsmemory's log lines carry entry ids);
* **appends** only when the caller declares its bytes unique (``unique=True``): the
  object stores' compare-and-swap rewrites skip bytes already present, and Redis's
  native ``APPEND`` is retried by :meth:`RetryPolicy.append` after checking the file
  does not hold them yet. Any other append is tried once.

At most :attr:`RetryPolicy.attempts` tries, and no new try after
:attr:`RetryPolicy.deadline` seconds; then :class:`~fsmemory.errors.BackendError` names
the operation, the tries and the time spent, the last failure chained. Client libraries'
own retries are switched off where the roots are built.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from fsmemory.errors import BackendError, ConflictError, InvalidInputError, KeyNotFoundError
from fsmemory.fs.base import OPTION_KEY
from fsmemory.fs.errors import is_transient

__all__ = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "RetryPolicy",
    "Retrying",
    "idempotent",
    "policy_from_options",
]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
_P = ParamSpec("_P")

_state = threading.local()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long a network root retries a transient failure.

    Attributes:
        attempts: tries per operation, the first included (1 = never retry).
        base_delay: seconds before the second try; doubled for each further try.
        max_delay: upper bound of one pause.
        deadline: no new try starts once this many seconds have passed since the first
            try. The worst case of one operation is about ``deadline`` plus one client
            timeout.
        jitter: each pause is drawn uniformly from ``[(1 - jitter) * d, d]`` so that
            writers that failed together do not retry together.
        clock: the monotonic clock the deadline is measured with (injectable for tests).
        sleep: how a pause is waited (injectable for tests).

    Raises:
        InvalidInputError: a value out of range.
    """

    attempts: int = 6
    base_delay: float = 0.05
    max_delay: float = 2.0
    deadline: float = 20.0
    jitter: float = 0.5
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise InvalidInputError("attempts must be an int >= 1")
        if self.attempts < 1:
            raise InvalidInputError("attempts must be >= 1")
        for name in ("base_delay", "max_delay", "deadline"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value < 0:
                raise InvalidInputError(f"{name} must be a number >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise InvalidInputError("jitter must be between 0 and 1")

    @classmethod
    def from_value(cls, value: RetryPolicy | Mapping[str, Any] | int | None) -> RetryPolicy:
        """A policy from a policy, a mapping of its fields, an attempt count, or None
        (the default policy).

        Raises:
            InvalidInputError: an unknown field or a value out of range.
        """
        if value is None:
            return DEFAULT_RETRY
        if isinstance(value, RetryPolicy):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(attempts=value)
        if isinstance(value, Mapping):
            known = {f.name for f in fields(cls)}
            unknown = set(value) - known
            if unknown:
                raise InvalidInputError(f"unknown retry option(s): {sorted(unknown)}")
            return cls(**dict(value))
        raise InvalidInputError(f"retry must be a RetryPolicy, a dict or an int, not {value!r}")

    def pauses(self) -> Iterator[float]:
        """The pauses between tries: ``attempts - 1`` jittered, capped exponential delays."""
        delay = self.base_delay
        for _ in range(self.attempts - 1):
            capped = min(delay, self.max_delay)
            yield capped * (1.0 - self.jitter * random.random())
            delay *= 2

    # -- running operations --------------------------------------------------------------
    def call(self, func: Callable[[], _T], *, what: str = "operation") -> _T:
        """Run an idempotent ``func``, retrying transient failures.

        Raises:
            BackendError: still failing when tries or time ran out (the last failure is
                chained). Non-transient errors propagate at once, unchanged.
        """
        return _Attempts(self, what).within(func)

    def write(
        self,
        put: Callable[[], str],
        probe: Callable[[], tuple[bool, str]],
        *,
        if_version: str | None,
        create_only: bool,
        what: str = "write",
        hidden_retries: bool = False,
    ) -> str:
        """Run a whole-file write, resolving ambiguous outcomes of conditional writes.

        Args:
            put: sends the write once; returns the new version.
            probe: looks at the object once; returns ``(holds_this_write, version)`` or
                raises :class:`~fsmemory.errors.KeyNotFoundError` when it is missing.
            if_version: the version the object must still have (with ``create_only``
                false and this ``None`` the write is unconditional, which is idempotent
                and simply retried).
            create_only: the object must not exist yet.
            what: names the operation in errors and logs.
            hidden_retries: the client may resend a request by itself, so even a first
                try's conflict may be this write landing twice: probe it.

        Returns:
            The version of the object holding the write.

        Raises:
            ConflictError: the condition does not hold (another writer won the race).
            BackendError: still failing when tries or time ran out.
        """
        conditional = create_only or if_version is not None
        attempt = _Attempts(self, what)
        ambiguous = False
        while True:
            try:
                return put()
            except ConflictError:
                if not (ambiguous or hidden_retries):
                    raise
                holds, landed = attempt.look(probe, (False, ""), "write")
                if holds:
                    logger.info("%s: an earlier try had landed although its reply was lost", what)
                    return landed
                raise
            except Exception as exc:
                if not is_transient(exc):
                    raise
                if not conditional:
                    attempt.failed(exc)
                    continue
                ambiguous = True
                outcome = self._resolve(probe, if_version, attempt)
                if outcome is not None:
                    logger.info("%s: the write landed although its reply was lost", what)
                    return outcome
                attempt.failed(exc)

    def append(
        self,
        once: Callable[[], int],
        find: Callable[[], int],
        *,
        what: str = "append",
    ) -> int:
        """Run a native append of bytes unique to the caller, retrying transient failures.

        After a failure the append may or may not have run (its reply may be what was
        lost), so before each new try ``find`` looks for the bytes in the file.

        Args:
            once: sends the append once; returns the offset where the bytes start.
            find: the offset where the file already holds the bytes, or -1 (raises
                :class:`~fsmemory.errors.KeyNotFoundError` when the file is missing).
            what: names the operation in errors and logs.

        Raises:
            BackendError: still failing when tries or time ran out.
        """
        attempt = _Attempts(self, what)
        while True:
            try:
                return once()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                found = attempt.look(find, -1, "append", exc)
                if found >= 0:
                    logger.info("%s: the append landed although its reply was lost", what)
                    return found
                attempt.failed(exc)

    def _resolve(
        self,
        probe: Callable[[], tuple[bool, str]],
        if_version: str | None,
        attempt: _Attempts,
    ) -> str | None:
        """After an ambiguous failure: the new version when the write landed, None when
        it may be sent again.

        Raises:
            ConflictError: another writer changed the object meanwhile.
        """
        try:
            holds, version = attempt.within(probe)
        except KeyNotFoundError:
            if if_version is None:
                return None  # create-only: still missing, send it again
            raise ConflictError("the object was deleted by another writer") from None
        except BackendError:
            return None  # cannot tell yet; the next try (or its conflict) will
        if holds:
            return version
        if if_version is not None and version == if_version:
            return None
        raise ConflictError("another writer changed the object meanwhile")


class _Attempts:
    """Counts tries and sleeps between them within the policy's limits."""

    def __init__(self, policy: RetryPolicy, what: str) -> None:
        self.policy = policy
        self.what = what
        self.started = policy.clock()
        self.tries = 1
        self.pauses = policy.pauses()

    def failed(self, exc: BaseException) -> None:
        """Sleep before the next try, or raise BackendError when out of tries or time."""
        elapsed = self.policy.clock() - self.started
        pause = next(self.pauses, None)
        if pause is None or elapsed + pause > self.policy.deadline:
            raise BackendError(
                f"{self.what}: gave up after {self.tries} tries in {elapsed:.1f} s: {exc}"
            ) from exc
        logger.debug(
            "%s: try %d failed (%s); retrying in %.3f s", self.what, self.tries, exc, pause
        )
        self.policy.sleep(pause)
        self.tries += 1

    def look(
        self, func: Callable[[], _T], missing: _T, change: str, cause: Exception | None = None
    ) -> _T:
        """``func()``, a read telling whether the ``change`` landed after a conflict or
        failure, within the budget; ``missing`` when the object does not exist.

        Raises:
            BackendError: the read itself kept failing (naming ``cause``, else that
                failure). The outcome is unknown, which is not a conflict: a caller
                re-applying its change would apply it twice.
        """
        try:
            return self.within(func)
        except KeyNotFoundError:
            return missing
        except BackendError as exc:
            failure = exc if cause is None else cause
            raise BackendError(
                f"{self.what}: gave up; the {change} may or may not have been applied: {failure}"
            ) from failure

    def within(self, func: Callable[[], _T]) -> _T:
        """Run an idempotent helper call (a resolving read) with the remaining budget."""
        while True:
            try:
                return func()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                self.failed(exc)


NO_RETRY = RetryPolicy(attempts=1)
"""Never retry (each operation is tried once)."""

DEFAULT_RETRY = RetryPolicy()
"""Up to 6 tries, pausing 50, 100, 200, 400 and 800 ms (less jitter) between them, no new
try after 20 s."""


class Retrying(Protocol):
    """Anything with a retry policy (the network roots)."""

    retry: RetryPolicy


_R = TypeVar("_R", bound=Retrying)


def idempotent(
    method: Callable[Concatenate[_R, _P], _T],
) -> Callable[Concatenate[_R, _P], _T]:
    """Mark a root method as safe to repeat: transient failures are retried under the
    root's :attr:`retry` policy.

    Calls nested inside one another (``delete_tree`` listing and deleting, a ranged read
    that stats) are retried once, by the outermost: an inner failure propagates to it.
    """

    def wrapper(self: _R, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if getattr(_state, "active", False):
            return method(self, *args, **kwargs)
        _state.active = True
        try:
            return self.retry.call(lambda: method(self, *args, **kwargs), what=method.__name__)
        finally:
            _state.active = False

    functools.update_wrapper(wrapper, method)
    return wrapper


def policy_from_options(options: dict[str, Any]) -> RetryPolicy:
    """Pop the ``"retry"`` storage option (if any) and return the policy it names.

    Raises:
        InvalidInputError: the option is malformed.
    """
    return RetryPolicy.from_value(options.pop(OPTION_KEY, None))
