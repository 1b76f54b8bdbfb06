"""Backend failures map to one fsmemory error each, in one place (fsmemory.fs.errors).

The exceptions here are built with the client libraries' own classes and translators,
exactly as s3fs/gcsfs raise them; the live services exercise the same paths in the
conformance suite.
"""

from __future__ import annotations

import errno

import pytest

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    ConflictError,
    InvalidPathError,
    KeyNotFoundError,
    NotAFileError,
)
from fsmemory.fs.errors import http_status, is_precondition_failure, translate_error, translated


def _client_error(code: str, status: int, condition: str | None = None) -> BaseException:
    from botocore.exceptions import ClientError

    error = {"Code": code, "Message": f"{code} happened"}
    if condition:
        error["Condition"] = condition
    exc: BaseException = ClientError(
        {"Error": error, "ResponseMetadata": {"HTTPStatusCode": status}}, "Op"
    )
    return exc


def _s3fs(code: str, status: int, condition: str | None = None) -> BaseException:
    from s3fs.errors import translate_boto_error

    exc: BaseException = translate_boto_error(_client_error(code, status, condition))
    return exc


def test_s3_if_match_412_is_conflict() -> None:
    """s3fs turns a failed If-Match into OSError(EINVAL); the cause says 412."""
    exc = _s3fs("PreconditionFailed", 412, "If-Match")
    assert isinstance(exc, OSError) and exc.errno == errno.EINVAL
    assert isinstance(translate_error(exc, "p"), ConflictError)


def test_s3_if_none_match_412_is_conflict() -> None:
    """s3fs turns a failed If-None-Match into FileExistsError."""
    exc = _s3fs("PreconditionFailed", 412, "If-None-Match")
    assert isinstance(exc, FileExistsError)
    assert isinstance(translate_error(exc, "p"), ConflictError)


def test_s3_other_einval_is_backend_error() -> None:
    """Other EINVAL errors (e.g. InvalidRange 416) are not conflicts."""
    exc = _s3fs("InvalidRange", 416)
    assert isinstance(exc, OSError) and exc.errno == errno.EINVAL
    new = translate_error(exc, "p")
    assert isinstance(new, BackendError) and not isinstance(new, ConflictError)
    assert http_status(exc) == 416


def test_s3_missing_key_is_key_not_found() -> None:
    """A missing key is KeyNotFoundError (also a FileNotFoundError)."""
    new = translate_error(_s3fs("NoSuchKey", 404), "p")
    assert isinstance(new, KeyNotFoundError) and isinstance(new, FileNotFoundError)


def test_s3_missing_bucket_is_not_a_missing_key() -> None:
    """A missing bucket is BucketNotFoundError, a BackendError: nobody catching a
    missing file may take it for one."""
    new = translate_error(_s3fs("NoSuchBucket", 404), "p")
    assert isinstance(new, BucketNotFoundError) and isinstance(new, BackendError)
    assert not isinstance(new, KeyNotFoundError)


@pytest.mark.parametrize("exc", [IsADirectoryError(21, "x"), NotADirectoryError(20, "x")])
def test_directory_errors_are_mapped_once(exc: OSError) -> None:
    """EISDIR/ENOTDIR: a directory where a file is expected -- NotAFileError, which is a
    KeyNotFoundError for readers."""
    new = translate_error(exc, "p")
    assert isinstance(new, NotAFileError) and isinstance(new, KeyNotFoundError)


def test_s3_access_denied_is_backend_error() -> None:
    """Auth failures are BackendError (an OSError)."""
    new = translate_error(_s3fs("AccessDenied", 403), "p")
    assert isinstance(new, BackendError) and isinstance(new, OSError)


def test_raw_client_error_412_is_conflict() -> None:
    """An untranslated botocore ClientError with 412 is a conflict too."""
    assert isinstance(translate_error(_client_error("PreconditionFailed", 412)), ConflictError)


def test_gcsfs_http_errors() -> None:
    """gcsfs HttpError carries ``code``: 412 conflict, 404 missing, 5xx backend."""
    from gcsfs.retry import HttpError

    assert isinstance(translate_error(HttpError({"code": 412, "message": "x"})), ConflictError)
    assert isinstance(translate_error(HttpError({"code": 404, "message": "x"})), KeyNotFoundError)
    assert isinstance(translate_error(HttpError({"code": 503, "message": "x"})), BackendError)


def test_gcsfs_validate_response() -> None:
    """What gcsfs raises for real responses maps as documented."""
    from gcsfs.retry import validate_response

    for status, body, expected in [
        (404, b"", KeyNotFoundError),
        (412, b"", ConflictError),
        (403, b'{"error": {"message": "denied"}}', BackendError),
        (400, b'{"error": {"message": "invalid argument"}}', BackendError),
        (500, b'{"error": {"message": "boom"}}', BackendError),
    ]:
        try:
            validate_response(status, body, "b/bucket/o/key")
        except Exception as exc:
            assert isinstance(translate_error(exc, "key"), expected), status
        else:  # pragma: no cover
            raise AssertionError(f"no error for {status}")


def test_text_never_decides() -> None:
    """A host or path containing "412" or "PreconditionFailed" is not a conflict."""
    exc = OSError("Cannot connect to host s3-412.example.com:443 [PreconditionFailed]")
    assert not is_precondition_failure(exc)
    assert isinstance(translate_error(exc, "412/PreconditionFailed"), BackendError)


def test_error_raised_while_handling_404_is_not_404() -> None:
    """Only explicit causes count, not the exception being handled."""
    try:
        try:
            raise FileNotFoundError("x")
        except FileNotFoundError:
            raise RuntimeError("something else") from None
    except RuntimeError as exc:
        assert isinstance(translate_error(exc), BackendError)
    try:
        try:
            raise FileNotFoundError("x")
        except FileNotFoundError:
            raise RuntimeError("implicit context")  # noqa: B904
    except RuntimeError as exc:
        assert isinstance(translate_error(exc), BackendError)


def test_passthrough_and_chaining() -> None:
    """Our own errors and ValueErrors pass through; others are chained as cause."""
    own = InvalidPathError("bad")
    assert translate_error(own) is own
    value = ValueError("ours")
    assert translate_error(value) is value
    with pytest.raises(BackendError) as info, translated("p"):
        raise TimeoutError("slow")
    assert isinstance(info.value.__cause__, TimeoutError)
    with pytest.raises(KeyNotFoundError), translated("p"):
        raise OSError(errno.ENOENT, "gone")
