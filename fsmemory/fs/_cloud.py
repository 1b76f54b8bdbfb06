"""How an S3, GCS or Azure Blob root picks its client: obstore, or the service's fsspec
filesystem (s3fs, gcsfs, adlfs).

A service describes itself once in a :class:`Cloud` (its predicate: can obstore serve
this configuration exactly as the fsspec client would resolve it; its two root classes,
which name its store class and its fallback client), and :meth:`Cloud.open` decides the
rest the same way for all:

* the storage option ``client``, or the service's ``FSMEMORY_*_CLIENT`` variable, forces
  a route (forcing obstore where it cannot serve raises saying why);
* a process forked after obstore was used takes the fallback, and so does one without
  obstore unless it was forced (or the fallback is missing too);
* roots of one bucket and configuration share their store in a process (a warm
  serverless worker reuses the connections);
* an obstore root's ``fs`` is the fallback's filesystem, built on first use, and in a
  forked child the root becomes the fallback root of the same URL and options.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from fsmemory._log import get_logger
from fsmemory.errors import InvalidInputError, InvalidPathError, MissingDependencyError
from fsmemory.fs._obstore import ObstoreRoot, obstore_usable
from fsmemory.fs.generic import FsspecRoot
from fsmemory.fs.open import split_protocol
from fsmemory.fs.retry import policy_from_options

__all__ = [
    "CLIENT_OPTION",
    "PROXY_VARIABLES",
    "Cloud",
    "Route",
    "client_options",
    "env_value",
    "foreign_environment",
    "same_file",
    "shared_store",
]

#: the storage option that picks the route
CLIENT_OPTION = "client"
#: variables that change how the fallback clients connect (obstore would ignore them)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass(frozen=True)
class Route:
    """Which client serves a configuration, and why.

    Attributes:
        client: ``"obstore"`` or the fallback's name (``"s3fs"``, ``"gcsfs"``, ``"adlfs"``).
        reason: why (for messages and logs).
        config: the obstore store's configuration (empty on the fallback).
        client_options: obstore's HTTP client options (empty on the fallback).
    """

    client: str
    reason: str
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    client_options: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Cloud:
    """What a service supplies to :meth:`Cloud.open` (its routes, its predicate).

    Attributes:
        extra: the extra that installs the obstore route (``"s3"``); it names the
            variable giving the default ``client`` for a whole process too
            (:attr:`env`).
        route: the predicate: ``route(url, options, environ)`` -> :class:`Route`
            (``options`` without ``retry`` and ``client``).
        obstore_root: the obstore route's root class (its ``store_class`` names the
            ``obstore.store`` class of a bucket).
        fallback_root: the fallback route's root class (also what an obstore root
            becomes in a forked child); its ``client`` is the fallback client's name.
        aliases: other names of ``"obstore"`` accepted by ``client``.
        refusal_falls_back: when obstore refuses to build the store, take the fallback
            (logged) instead of raising obstore's error.
        bucket_word: what its URLs name first (``"bucket"``, ``"container"``).
    """

    extra: str
    route: Callable[[str, dict[str, Any], Mapping[str, str]], Route]
    obstore_root: type[ObstoreRoot]
    fallback_root: type[FsspecRoot]
    aliases: tuple[str, ...] = ()
    refusal_falls_back: bool = False
    bucket_word: str = "bucket"

    @property
    def env(self) -> str:
        """The variable giving the default ``client`` (``FSMEMORY_S3_CLIENT``)."""
        return f"FSMEMORY_{self.extra.upper()}_CLIENT"

    @property
    def fallback(self) -> str:
        """The fallback client's name (a value of ``client``: ``"s3fs"``)."""
        # every fallback root class names its client (s3fs, gcsfs, adlfs)
        return str(self.fallback_root.client)  # type: ignore[attr-defined]

    @property
    def choices(self) -> tuple[str, ...]:
        """The values the ``client`` option takes."""
        return ("auto", "obstore", *self.aliases, self.fallback)

    def resolve(
        self,
        url: str,
        options: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Route:
        """Which client serves ``url`` with these storage options (``retry`` ignored,
        ``client`` honoured) in this environment (default ``os.environ``).

        Raises:
            InvalidInputError: a bad ``client``, or ``client="obstore"`` for a
                configuration obstore cannot serve.
        """
        env = os.environ if environ is None else environ
        given = dict(options or {})
        choice = self._choice(given, env)
        if choice == self.fallback:
            return Route(self.fallback, f"forced ({CLIENT_OPTION}={choice!r} or {self.env})")
        opts = {k: v for k, v in given.items() if k not in ("retry", CLIENT_OPTION)}
        route = self.route(url, opts, env)
        if choice == "obstore" and route.client != "obstore":
            raise InvalidInputError(
                f"{url}: obstore cannot serve this configuration: {route.reason}"
            )
        return route

    def _choice(self, options: Mapping[str, Any], environ: Mapping[str, str]) -> str:
        """The ``client`` asked for (``"auto"`` when none).

        Raises:
            InvalidInputError: a value that names no route.
        """
        given = options.get(CLIENT_OPTION) or environ.get(self.env) or "auto"
        choice = str(given).strip().lower()
        if choice not in self.choices:
            raise InvalidInputError(
                f"storage option {CLIENT_OPTION!r} must be one of {', '.join(self.choices)}: "
                f"{choice!r}"
            )
        return "obstore" if choice in self.aliases else choice

    def open(self, url: str, options: Mapping[str, Any] | None) -> Any:
        """The root of ``url`` on the route :meth:`resolve` picks (see the module docs).

        Raises:
            InvalidInputError: a malformed ``retry`` or ``client`` option, or a forced
                route that cannot serve the configuration.
            InvalidPathError: the URL names no bucket.
            MissingDependencyError: the route's package is not installed.
        """
        opts = dict(options or {})
        policy = policy_from_options(opts)
        forced = self._choice(opts, os.environ) == "obstore"
        route = self.resolve(url, opts)
        opts.pop(CLIENT_OPTION, None)
        path = split_protocol(url)[1].strip("/")
        bucket = path.split("/", 1)[0]
        if not bucket:
            service = self.obstore_root.service
            raise InvalidPathError(f"{service} URLs need a {self.bucket_word}: {url!r}")
        fallback = self.fallback_root
        logger = get_logger(fallback.__module__)
        if route.client == "obstore" and not obstore_usable():
            route = Route(self.fallback, "a process forked after obstore was used")
        if route.client == "obstore":
            try:
                store, observers = shared_store(self.obstore_root.store_class, bucket, route)
            except ImportError as exc:
                if forced or not _installed(self.fallback):
                    raise MissingDependencyError("obstore", self.extra) from exc
                route = Route(self.fallback, "obstore is not installed")
            except Exception as exc:
                if not self.refusal_falls_back:
                    raise
                if forced:
                    raise InvalidInputError(
                        f"{url}: obstore refused the configuration: {exc}"
                    ) from exc
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                route = Route(self.fallback, f"obstore refused the configuration ({first})")
                logger.info("%s takes %s: %s", url, self.fallback, route.reason)
            else:
                return self.obstore_root(
                    store,
                    path,
                    route=route,
                    url=url,
                    retry=policy,
                    fs_factory=_fs_factory(fallback, url, opts),
                    observers=observers,
                    fork_class=fallback,
                )
        logger.debug("%s takes %s: %s", url, self.fallback, route.reason)
        fs, full = fallback._connect(url, dict(opts))
        # The factory builds the filesystem again in a forked child (fsspec's async
        # filesystems refuse to work across fork()).
        return fallback(
            fs, full, url=url, retry=policy, fs_factory=_fs_factory(fallback, url, opts)
        )


def client_options(connect: float, total: float, endpoint: str | None) -> dict[str, Any]:
    """obstore's HTTP client options: ``connect`` seconds to connect, ``total`` for the
    whole request, plain HTTP allowed for an ``http://`` endpoint."""
    options: dict[str, Any] = {
        "connect_timeout": timedelta(seconds=connect),
        "timeout": timedelta(seconds=total),
    }
    if endpoint and endpoint.startswith("http://"):
        options["allow_http"] = True
    return options


def env_value(environ: Mapping[str, str], name: str) -> str | None:
    """The variable's value without surrounding blanks, or None when unset or blank."""
    return environ.get(name, "").strip() or None


def same_file(a: str, b: str | None) -> bool:
    """Whether ``a`` and ``b`` name the same existing file."""
    try:
        return b is not None and os.path.samefile(a, b)
    except OSError:
        return False


def foreign_environment(
    environ: Mapping[str, str],
    prefix: str,
    known: frozenset[str],
    *,
    ignored: tuple[str, ...] = (),
    ca_bundles: tuple[str, ...] = (),
) -> str | None:
    """Why the environment configures more than the obstore route models, or None: a
    variable starting with ``prefix`` (``AWS_``, ``GOOGLE_``) that is neither ``known``
    nor starts with one of ``ignored`` (obstore reads some by itself, the fallback
    others), a proxy, or a CA bundle of the fallback's (``ca_bundles``) other than the
    system's ``SSL_CERT_FILE``, the only certificates obstore trusts."""
    for name in sorted(environ):
        if not name.startswith(prefix) or not environ[name].strip():
            continue
        if name not in known and not name.startswith(ignored):
            return f"environment variable {name}"
    for name in PROXY_VARIABLES:
        if env_value(environ, name) or env_value(environ, name.lower()):
            return f"environment variable {name} (proxy settings)"
    for name in ca_bundles:
        bundle = env_value(environ, name)
        if bundle and not same_file(bundle, env_value(environ, "SSL_CERT_FILE")):
            return f"{name} names another CA bundle than SSL_CERT_FILE"
    return None


def _fs_factory(cls: type[FsspecRoot], url: str, options: dict[str, Any]) -> Callable[[], Any]:
    def factory() -> Any:
        return cls._connect(url, dict(options))[0]

    return factory


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    import importlib.util  # only when a route is missing

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


#: obstore stores (and the observers of their roots) by class, bucket and configuration
_STORES: dict[str, tuple[Any, builtins.list[Any]]] = {}
_STORES_LOCK = threading.Lock()


def shared_store(store_class: str, bucket: str, route: Route) -> tuple[Any, builtins.list[Any]]:
    """The ``obstore.store`` ``store_class`` of ``bucket`` for this route, built once per
    process with obstore's retries off (fsmemory's retry policy is the one retry layer),
    and the observers list its roots share.

    Raises:
        ImportError: obstore is not installed.
        obstore's error: the configuration was refused (a key it cannot parse, ...).
    """
    key = repr(
        (store_class, bucket, sorted(route.config.items()), sorted(route.client_options.items()))
    )
    with _STORES_LOCK:
        found = _STORES.get(key)
        if found is None:
            import obstore.store

            store = getattr(obstore.store, store_class)(
                bucket,
                config=route.config,
                client_options=route.client_options,
                retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=0)},
            )
            found = _STORES[key] = (store, [])
    return found
