"""The one place where backend failures become fsmemory errors.

Storage roots wrap their calls in :func:`translated` (:func:`translate_error`):

* missing object (``FileNotFoundError``, HTTP 404, ``NoSuchKey``) -> :class:`KeyNotFoundError`;
  a directory where a file is expected or the reverse -> :class:`NotAFileError`
* missing bucket (``NoSuchBucket``) -> :class:`BucketNotFoundError` (the bucket roots also
  check the bucket once on a bare 404, see :mod:`fsmemory.fs._bucket`)
* failed precondition (HTTP 412, ``PreconditionFailed``, a create-only write that found
  the object) -> :class:`ConflictError`
* anything else (auth, network, 5xx, timeouts, gcsfs's ``ValueError("Bad Request: ...")``)
  -> :class:`BackendError`, the original chained as ``__cause__``; fsmemory's own errors,
  other ``ValueError``/``TypeError`` and ``KeyboardInterrupt`` pass through.

The cause chain matters: s3fs translates botocore's ``ClientError`` into builtins and
chains the original (a 412 on ``If-Match`` becomes ``OSError(EINVAL)``; only the chained
``PreconditionFailed`` tells it apart); gcsfs raises ``FileExistsError`` on every 412,
``OSError("Forbidden ...")`` on 403 and ``HttpError`` (attribute ``code``) for the rest;
aiohttp's errors carry ``status``.

:func:`is_transient` tells the retry policy which failures are worth another try.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    FsMemoryError,
    KeyNotFoundError,
    NotAFileError,
)

__all__ = [
    "conditional_write",
    "http_status",
    "is_precondition_failure",
    "is_transient",
    "missing_bucket",
    "translate_error",
    "translated",
]

_PRECONDITION_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "412"}
_NOT_FOUND_CODES = {"NoSuchKey", "NotFound", "404"}

# gcsfs turns some 400 responses into ValueError with this prefix.
_GCSFS_BAD_REQUEST = "Bad Request:"

#: HTTP statuses worth another try
_RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: 5xx statuses that say what the server can never do (a method it does not implement,
#: an HTTP version it does not speak): another try gets the same answer
_FINAL_5XX = frozenset({501, 505})

# Exception classes (matched by name anywhere in the MRO, so no client library has to be
# imported) that mean the request may not have reached the service or its reply was lost.
_TRANSIENT_NAMES = frozenset(
    {
        # builtins: ConnectionResetError, BrokenPipeError, ConnectionRefusedError, ...
        "ConnectionError",
        "TimeoutError",
        # botocore / aiobotocore
        "HTTPClientError",
        "EndpointConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "ConnectionClosedError",
        "ResponseStreamingError",
        "ResponseParserError",
        "IncompleteReadError",
        # aiohttp
        "ClientConnectionError",
        "ClientPayloadError",
        "ServerTimeoutError",
        # http.client / requests (gcsfs maps HTTP 502 to requests' ProxyError)
        "IncompleteRead",
        "RemoteDisconnected",
        "ChunkedEncodingError",
        "ProxyError",
        # fsspec, gcsfs
        "FSTimeoutError",
        "ChecksumError",
    }
)


# Subclasses of connection errors that another try cannot fix.
_FINAL_NAMES = frozenset({"AuthenticationError", "AuthorizationError", "NoCredentialsError"})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was explicitly raised from (``__cause__``).

    ``__context__`` is not followed: an error raised while *handling* a 404 is not a 404.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status one exception carries, if any (botocore, aiohttp, gcsfs)."""
    response: Any = getattr(exc, "response", None)
    if isinstance(response, dict):
        meta = response.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        if isinstance(status, int):
            return status
    for attr in ("status", "code", "status_code"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
        if isinstance(value, str) and value.isdigit() and 100 <= int(value) <= 599:
            return int(value)
    return None


def _error_code_of(exc: BaseException) -> str | None:
    """The service error code of a botocore ``ClientError`` (``"NoSuchKey"``, ...)."""
    response: Any = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        if code is not None:
            return str(code)
    return None


def http_status(exc: BaseException) -> int | None:
    """The HTTP status behind ``exc`` or anything in its cause chain, if known."""
    for cur in _chain(exc):
        status = _status_of(cur)
        if status is not None:
            return status
    return None


def is_precondition_failure(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is an HTTP 412.

    Only structured information counts (status attributes, botocore error codes):
    never the message text, which may contain a path or a host name with "412" in it.
    """
    for cur in _chain(exc):
        if _status_of(cur) == 412 or _error_code_of(cur) in _PRECONDITION_CODES:
            return True
    return False


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` is a failure that another try may not repeat.

    Looks at ``exc`` and its cause chain: a retryable HTTP status (408, 425, 429, 5xx) or
    a connection, timeout or truncated-response error of the client libraries. Missing
    objects, conflicts, invalid input, authentication errors, other 4xx (405 Method Not
    Allowed included) and 501/505 are final.
    """
    for cur in _chain(exc):
        if isinstance(cur, KeyNotFoundError | ConflictError | ValueError | TypeError):
            return False
        status = _status_of(cur)
        if status is not None:
            return status in _RETRYABLE_STATUS or (status >= 500 and status not in _FINAL_5XX)
        if isinstance(cur, OSError) and str(cur).startswith("Forbidden"):
            return False  # gcsfs's HTTP 403
        names = {c.__name__ for c in type(cur).__mro__}
        if names & _FINAL_NAMES:
            return False
        if names & _TRANSIENT_NAMES:
            return True
    return False


def missing_bucket(exc: BaseException) -> str | None:
    """The bucket name when ``exc`` (or its cause chain) is an S3 ``NoSuchBucket``
    (``""`` when the response does not name it), else None."""
    for cur in _chain(exc):
        if _error_code_of(cur) == "NoSuchBucket":
            response: Any = getattr(cur, "response", None)
            return str((response.get("Error") or {}).get("BucketName") or "")
    return None


def _is_not_found(exc: BaseException) -> bool:
    for cur in _chain(exc):
        if isinstance(cur, FileNotFoundError):
            return True
        if _status_of(cur) == 404 or _error_code_of(cur) in _NOT_FOUND_CODES:
            return True
    return False


def translate_error(exc: BaseException, path: str = "") -> BaseException:
    """Map a backend exception to the fsmemory error a caller should see.

    Args:
        exc: what the filesystem or client library raised.
        path: the root-relative path concerned, for the message.

    Returns:
        ``exc`` itself when it needs no translation, otherwise a new fsmemory error
        (the caller chains ``exc`` as its cause; :func:`translated` does).
    """
    if isinstance(exc, ValueError) and str(exc).startswith(_GCSFS_BAD_REQUEST):
        return BackendError(f"{path}: {exc}")
    if isinstance(exc, FsMemoryError | ValueError | TypeError | KeyboardInterrupt):
        return exc
    if isinstance(exc, FileExistsError):
        return ConflictError(f"{path}: already exists")
    if is_precondition_failure(exc):
        return ConflictError(f"{path}: precondition failed (changed concurrently)")
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        what = "is a directory" if isinstance(exc, IsADirectoryError) else "a parent is a file"
        return NotAFileError(f"{path}: {what}")
    bucket = missing_bucket(exc)
    if bucket is not None:
        return BucketNotFoundError(bucket or path)
    if _is_not_found(exc) or (isinstance(exc, OSError) and exc.errno == errno.ENOENT):
        return KeyNotFoundError(path or str(exc))
    return BackendError(f"{path}: {type(exc).__name__}: {exc}")


@contextmanager
def translated(path: str = "") -> Iterator[None]:
    """Run a block and re-raise backend exceptions as fsmemory errors."""
    try:
        yield
    except Exception as exc:
        new = translate_error(exc, path)
        if new is exc:
            raise
        raise new from exc


@contextmanager
def conditional_write(path: str, if_version: str | None, create: bool) -> Iterator[None]:
    """Run a conditional write of ``path`` and re-raise a failed condition as the
    :class:`ConflictError` that says which (an ``If-Match`` on an object that is gone
    included)."""
    try:
        yield
    except KeyNotFoundError as exc:
        if if_version is None:
            raise
        raise ConflictError(f"{path!r} no longer exists (version {if_version})") from exc
    except ConflictError as exc:
        if create:
            raise ConflictError(f"{path!r} already exists") from exc
        raise ConflictError(f"{path!r} changed since version {if_version}") from exc
