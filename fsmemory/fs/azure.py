"""Azure Blob Storage root (``az://``, ``abfs://``, ``abfss://``): native compare-and-swap
through obstore, adlfs where obstore cannot serve the configuration.

``az://container/prefix`` addresses a prefix in one container. **Which client** is
decided once per root by :func:`resolve_route` (see :mod:`fsmemory.fs._cloud`),
resolving credentials exactly as adlfs would: **obstore** (:class:`AzureRoot`) when the
credential is a shared key or a SAS token, from a connection string (option
``connection_string`` or ``AZURE_STORAGE_CONNECTION_STRING``: ``AccountName`` with
``AccountKey`` or ``SharedAccessSignature``, optionally ``BlobEndpoint``,
``DefaultEndpointsProtocol``, ``EndpointSuffix``), else from ``account_name`` with
``account_key`` or ``sas_token`` (options or ``AZURE_STORAGE_*`` variables;
``account_host`` names another endpoint host). Endpoint and credential are passed to
obstore explicitly, so its own reading of ``AZURE_*`` variables cannot pick others.
**adlfs** (:class:`AdlfsRoot`) for everything else: a ``credential`` object, a service
principal, ``DefaultAzureCredential``, anonymous access, ``UseDevelopmentStorage=true``,
an account in the URL host, any option obstore does not model.
``client="adlfs"|"obstore"|"auto"`` or ``FSMEMORY_AZURE_CLIENT`` forces a route.

On obstore the requests are those of :mod:`fsmemory.fs._obstore`, except that a listing
takes one ``List Blobs`` per 5000 names and ``delete_many`` one ``Delete Blob`` per blob,
8 at a time. The version token is the ETag without quotes; a failed ``If-Match`` (412),
a create-only write on an existing blob (409) and an ``If-Match`` on a blob that is gone
are :class:`~fsmemory.errors.ConflictError`. An obstore request is bounded by
:data:`REQUEST_TIMEOUT` (connecting by :data:`CONNECT_TIMEOUT`).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, TypeVar

from fsmemory.errors import (
    BackendError,
    BucketNotFoundError,
    KeyNotFoundError,
    MissingDependencyError,
)
from fsmemory.fs._bucket import client_subclass
from fsmemory.fs._cloud import Cloud, Route, client_options
from fsmemory.fs._obstore import (
    ObstoreConnectionError,
    ObstoreRoot,
    unquote_etag,
)
from fsmemory.fs.base import Capabilities, FileInfo, Versioned
from fsmemory.fs.errors import http_status, translated
from fsmemory.fs.generic import FsspecRoot

__all__ = [
    "CLIENT_ENV",
    "CONNECT_TIMEOUT",
    "REQUEST_TIMEOUT",
    "WRITE_MARKER",
    "AdlfsRoot",
    "AzureRoot",
    "resolve_route",
]

_T = TypeVar("_T")

#: seconds one request may take as a whole on the obstore route, and to connect
REQUEST_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0

#: storage options the obstore route understands (any other one goes to adlfs)
_OBSTORE_OPTIONS = frozenset(
    {"account_name", "account_key", "sas_token", "connection_string", "account_host", "anon"}
)
#: connection-string keys the obstore route understands (lower case); the endpoints of
#: the other storage services are irrelevant to blobs
_CONNECTION_KEYS = frozenset(
    """defaultendpointsprotocol accountname accountkey sharedaccesssignature blobendpoint
    endpointsuffix queueendpoint tableendpoint fileendpoint""".split()  # noqa: SIM905
)

#: the user-metadata key of the marker a conditional write carries: Azure metadata
#: names must be C# identifiers (no ``-``; ``fsmemory-write`` is refused with 400
#: InvalidMetadata)
WRITE_MARKER = "fsmemory_write"


def _env(environ: Mapping[str, str], name: str) -> str | None:
    """The variable as adlfs reads it: not stripped (unlike
    :func:`~fsmemory.fs._cloud.env_value`), so a blank connection string still comes
    first, as in adlfs; None when unset or empty."""
    return environ.get(name) or None


def _parse_connection_string(text: str) -> dict[str, str] | None:
    """The ``key=value`` pairs of a connection string (keys lower case), or None when
    it holds a part that is not one."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep:
            return None
        out[key.strip().lower()] = value.strip()
    return out


def _obstore_route(
    account: str, endpoint: str, key: str | None, sas: str | None, source: str
) -> Route:
    config: dict[str, Any] = {
        "account_name": account,
        "endpoint": endpoint.rstrip("/"),
        "use_emulator": False,
    }
    if key is not None:
        config.update(credential_type="access_key", account_key=key)
        what = "account key"
    else:
        assert sas is not None
        config.update(credential_type="sas_token", sas_key=sas.lstrip("?"))
        what = "SAS token"
    http = client_options(CONNECT_TIMEOUT, REQUEST_TIMEOUT, endpoint)
    return Route("obstore", f"{what} from {source}", config, http)


def _route(url: str, options: Mapping[str, Any], environ: Mapping[str, str]) -> Route:
    """The route of an Azure root (see the module docs)."""
    netloc = url.partition("://")[2].partition("/")[0]
    if "@" in netloc:
        return Route("adlfs", "the URL names the account in its host (container@account...)")
    unknown = sorted(set(options) - _OBSTORE_OPTIONS)
    if unknown:
        return Route("adlfs", f"storage option(s) obstore does not model: {', '.join(unknown)}")
    if options.get("anon"):
        return Route("adlfs", "anonymous access (anon=True)")
    connection = options.get("connection_string") or _env(
        environ, "AZURE_STORAGE_CONNECTION_STRING"
    )
    if connection:
        source = "the connection string"
        parts = _parse_connection_string(str(connection))
        if parts is None:
            return Route("adlfs", "a connection string obstore cannot parse")
        if parts.get("usedevelopmentstorage", "").lower() == "true":
            return Route("adlfs", "UseDevelopmentStorage=true")
        odd = sorted(set(parts) - _CONNECTION_KEYS)
        if odd:
            return Route(
                "adlfs", f"connection-string key(s) obstore does not model: {', '.join(odd)}"
            )
        account = parts.get("accountname")
        key = parts.get("accountkey") or None
        sas = parts.get("sharedaccesssignature") or None
        if not account or not (key or sas):
            return Route("adlfs", "a connection string without AccountName and a key or SAS token")
        endpoint = parts.get("blobendpoint") or (
            f"{parts.get('defaultendpointsprotocol') or 'https'}://{account}.blob."
            f"{parts.get('endpointsuffix') or 'core.windows.net'}"
        )
        return _obstore_route(account, endpoint, key, None if key else sas, source)
    account = options.get("account_name") or _env(environ, "AZURE_STORAGE_ACCOUNT_NAME")
    if not account:
        return Route("adlfs", "no account name (adlfs reports what is missing)")
    host = options.get("account_host")
    endpoint = f"https://{host}" if host else f"https://{account}.blob.core.windows.net"
    key = options.get("account_key") or _env(environ, "AZURE_STORAGE_ACCOUNT_KEY")
    if key:
        return _obstore_route(str(account), endpoint, str(key), None, "the options/environment")
    sas = options.get("sas_token") or _env(environ, "AZURE_STORAGE_SAS_TOKEN")
    if sas:
        return _obstore_route(str(account), endpoint, None, str(sas), "the options/environment")
    return Route(
        "adlfs",
        "no account key or SAS token: adlfs resolves the credential (service principal, "
        "DefaultAzureCredential or anonymous)",
    )


class AzureRoot(ObstoreRoot):
    """A prefix in an Azure Blob container (``az://container/prefix``) with native
    compare-and-swap through obstore (:class:`~fsmemory.fs._obstore.ObstoreRoot`).

    Built by :meth:`from_url`, which returns a plain
    :class:`~fsmemory.fs.generic.FsspecRoot` over adlfs instead when obstore cannot
    serve the configuration (see the module docs). The constructor arguments are
    :class:`~fsmemory.fs._obstore.ObstoreRoot`'s, ``store`` being an
    ``obstore.store.AzureStore`` for the container.
    """

    service = "Azure Blob"
    store_class: ClassVar[str] = "AzureStore"

    # -- writes: the marker under a name Azure accepts, one Put Blob each ---------------
    write_marker = WRITE_MARKER
    put_options: ClassVar[Mapping[str, Any]] = {"use_multipart": False}
    # Not obstore's blob batch: Azure fails a whole batch when one blob of it is gone
    # (after deleting the others), so it cannot tell what it deleted.
    delete_threads: ClassVar[int | None] = 8

    # -- reads and deletes: where Azure answers otherwise than S3 ------------------------
    async def _get_range(self, key: str, start: int, end: int | None) -> bytes:
        """One ranged ``Get Blob``. A whole blob is read without a range (an empty blob
        has none), and the range starts one byte early, so reading exactly at the end
        (a reader tailing a log) gets that byte back instead of a failure; a range that
        still fails is checked against the blob's size (past the end: ``b""``)."""
        if start == 0 and end is None:
            return self._get(key)[0]
        lo = start - 1 if start > 0 else 0
        wanted: Any = {"offset": lo} if end is None else (lo, end)
        try:
            data = self._get(key, {"range": wanted})[0]
        except (FileNotFoundError, KeyNotFoundError, ObstoreConnectionError):
            raise
        except Exception:
            meta = await self._head(key)
            if int(meta.get("size") or 0) <= start:
                return b""
            raise
        return data[start - lo :]


def _exact_names_class() -> Any:
    """A subclass of adlfs's filesystem that takes a bare ``container/key`` path as a
    name, not as a URL (built once; pickle finds it by name in this module).

    adlfs parses every path as a URL (``abfs://`` + path): a key holding ``?`` followed
    by ``#``, or ending in ``?``, loses the ``?`` -- the bytes of ``notes?`` would go to
    the blob ``notes``, of ``a?#b`` to ``a#b``. A path with a protocol is still parsed
    by adlfs.

    Raises:
        MissingDependencyError: adlfs is not installed (``fsmemory[adlfs]``).
    """
    try:
        from adlfs import AzureBlobFileSystem
    except ImportError as exc:
        raise MissingDependencyError("adlfs", "adlfs") from exc

    def _strip_protocol(klass: Any, path: Any) -> Any:
        if isinstance(path, str) and "://" not in path:
            return path.lstrip("/")
        return AzureBlobFileSystem._strip_protocol.__func__(klass, path)

    return client_subclass(
        __name__,
        "AzureBlobFileSystemExactNames",
        AzureBlobFileSystem,
        {"_strip_protocol": classmethod(_strip_protocol)},
        "adlfs's filesystem taking bare paths as names (fsmemory).",
    )


def __getattr__(name: str) -> Any:
    """Build the adlfs subclass on demand (unpickling a filesystem)."""
    if name == "AzureBlobFileSystemExactNames":
        return _exact_names_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class AdlfsRoot(FsspecRoot):
    """The adlfs route: an fsspec root over adlfs's filesystem with native
    compare-and-swap (no lease object), and three adlfs quirks fixed.

    A write is one ``Put Blob`` through azure-storage-blob's ``upload_blob``
    (``If-None-Match: *`` to create, ``If-Match: <etag>`` to swap); a versioned read one
    ``Get Blob``, content and ETag from the same response. azure-core's retries are off
    for both (``retry_total=0``), but aiohttp resends a ``PUT`` once by itself when a
    kept-alive connection drops (then answered with 412), so a conditional write carries
    a random marker in the blob's metadata (:data:`WRITE_MARKER`) that one
    ``Get Blob Properties`` reads back after any conflict or ambiguous failure. adlfs's
    other calls (idempotent) keep azure-storage-blob's own retries, which adlfs does not
    let a caller switch off: a failing service takes longer to give up than the retry
    policy's deadline says.

    Quirks fixed: a name holding ``?`` then ``#`` (or ending in ``?``) would be written
    to **another** blob (:func:`_exact_names_class`); a range starting past the end of a
    blob reads as ``b""`` instead of failing with HTTP 416; a missing container raises
    :class:`~fsmemory.errors.BucketNotFoundError` naming it (checked on the first "not
    found" or empty listing) instead of looking like an empty memory.

    Args: those of :class:`~fsmemory.fs.generic.FsspecRoot`.
    """

    capabilities = Capabilities(conditional_write=True, native_append=False)
    #: which client sends this root's requests (``AzureRoot.client``: ``"obstore"``)
    client: ClassVar[str] = "adlfs"
    # aiohttp resends a PUT once on a dropped kept-alive connection: probe every conflict
    _hidden_retries = True
    _marks_writes = True
    _container_seen = False

    # -- native conditional writes -------------------------------------------------------
    def _blob(self, full: str, use: Callable[[Any], Awaitable[_T]]) -> _T:
        """``await use(<blob client of full>)`` on adlfs's loop."""
        from fsspec.asyn import sync

        container, blob, _ = self.fs.split_path(full)

        async def call() -> _T:
            blob_client = self.fs.service_client.get_blob_client(container=container, blob=blob)
            async with blob_client as client:
                return await use(client)

        result: _T = sync(self.fs.loop, call)
        return result

    def _read_versioned(self, full: str, path: str) -> Versioned:
        """One ``Get Blob``: content and ETag from the same response."""

        async def get(client: Any) -> tuple[bytes, str]:
            stream = await client.download_blob(retry_total=0)
            return bytes(await stream.readall()), str(stream.properties.etag)

        with self._container_known(), translated(path):
            data, etag = self._blob(full, get)
        return Versioned(data, unquote_etag(etag))

    _put = FsspecRoot._put_native

    def _upload(
        self, full: str, data: bytes, if_version: str | None, create: bool, marker: str | None
    ) -> str:
        """One ``Put Blob``, with ``If-None-Match: *`` or ``If-Match`` when asked, tagged
        with ``marker`` in the blob's metadata (beside the ``is_directory`` adlfs writes)."""
        metadata = {"is_directory": "false"}
        if marker is not None:
            metadata[WRITE_MARKER] = marker
        options: dict[str, Any] = {"overwrite": not create, "metadata": metadata}
        if if_version is not None:
            from azure.core import MatchConditions

            options.update(etag=f'"{if_version}"', match_condition=MatchConditions.IfNotModified)

        async def upload(client: Any) -> Any:
            try:
                return await client.upload_blob(data, retry_total=0, **options)
            except Exception as exc:
                if getattr(exc, "status_code", None) == 409:  # create-only: it exists
                    raise FileExistsError(full) from exc
                raise

        return unquote_etag((self._blob(full, upload) or {}).get("etag"))

    def _read_marker(self, full: str, path: str) -> tuple[str | None, str]:
        """The marker and ETag of the blob (one ``Get Blob Properties``)."""
        with self._container_known(), translated(path):
            props = self._blob(full, lambda client: client.get_blob_properties(retry_total=0))
        return (props.metadata or {}).get(WRITE_MARKER), unquote_etag(props.etag)

    _create_exclusive = FsspecRoot._create_with_put

    def _token(self, info: dict[str, Any]) -> str:
        return unquote_etag(info.get("etag")) or super()._token(info)

    # -- a missing container -------------------------------------------------------------
    def _check_container(self) -> None:
        """Raise BucketNotFoundError when the container is missing (checked until it is
        seen once; a check that fails says nothing)."""
        if self._container_seen:
            return
        container = self.root.split("/", 1)[0]
        try:
            exists = bool(self.fs.exists(container))
        except Exception:
            return
        if not exists:
            raise BucketNotFoundError(container, "Azure Blob")
        self._container_seen = True

    @contextmanager
    def _container_known(self) -> Iterator[None]:
        try:
            yield
        except KeyNotFoundError:
            self._check_container()
            raise

    def stat(self, path: str) -> FileInfo | None:
        """See :meth:`FsspecRoot.stat` (a missing container raises)."""
        info = super().stat(path)
        if info is None:
            self._check_container()
        return info

    def list(self, prefix: str = "", *, recursive: bool = False) -> builtins.list[FileInfo]:
        """See :meth:`FsspecRoot.list` (a missing container raises)."""
        found = super().list(prefix, recursive=recursive)
        if not found:
            self._check_container()
        return found

    def list_names(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        """See :meth:`FsspecRoot.list_names` (a missing container raises)."""
        files, dirs = super().list_names(prefix)
        if not files and not dirs:
            self._check_container()
        return files, dirs

    def write(
        self, path: str, data: bytes, *, if_version: str | None = None, create_only: bool = False
    ) -> str:
        """See :meth:`FsspecRoot.write` (a missing container raises)."""
        with self._container_known():
            return super().write(path, data, if_version=if_version, create_only=create_only)

    _fs_class = staticmethod(_exact_names_class)

    def read_range(self, path: str, start: int, end: int | None = None) -> bytes:
        """See :meth:`FsspecRoot.read_range`; a range past the end reads as ``b""``."""
        try:
            with self._container_known():
                return super().read_range(path, start, end)
        except BackendError as exc:
            if http_status(exc) == 416:  # Range Not Satisfiable: the blob ends before
                return b""
            raise


AzureRoot.cloud = Cloud(
    bucket_word="container",
    extra="azure",
    route=_route,
    obstore_root=AzureRoot,
    fallback_root=AdlfsRoot,
)
#: the environment variable giving the default of the ``client`` storage option
CLIENT_ENV = AzureRoot.cloud.env
#: which client serves a URL with these options (see the module docs)
resolve_route = AzureRoot.cloud.resolve
