"""Serverless invocations: a steady number of requests, warm revalidation, options."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from fsmemory import InvalidInputError, KnowledgeMemory
from fsmemory.snapshot import FsspecBackend
from fsmemory.testing.requests import count_requests

from .conftest import make_spec, open_backend

COUNTED = [
    pytest.param("s3", marks=pytest.mark.s3),
    pytest.param("gcs", marks=pytest.mark.gcs),
    pytest.param("redis-fs", marks=pytest.mark.redis),
]
#: requests of one listing of the snapshot's objects (bases and deltas): one on S3 and
#: GCS, and on redis:// one round trip per folder level (the bases' folder and the
#: deltas')
LISTING = {"s3": 1, "gcs": 1, "redis-fs": 2}
#: requests of a fold beside its base and head: one batched delete on S3 and redis://;
#: GCS (fake-gcs-server) deletes each object apart
FOLD_DELETES = {"s3": 1, "gcs": 4, "redis-fs": 2}
COMPACT_AFTER = 8


def invocation(scratch: Path, backend: FsspecBackend, i: int) -> tuple[int, int, int]:
    """One cold invocation (fresh scratch folder): (requests, bytes uploaded, folds)."""
    with count_requests(backend.root) as requests:
        km = KnowledgeMemory(scratch, backend=backend, snapshot_compact_after=COMPACT_AFTER)
        km.remember(f"fact {i}", category="preferences", persistent=True)
        km.remember(f"note {i}")
        km.build_context()
        km.recall("fact")
        km.flush()
    assert km._replica is not None
    return len(requests), km._replica.bytes_uploaded, km._replica.folds


@pytest.mark.parametrize("kind", COUNTED)
def test_an_invocation_uploads_its_deltas_and_folds_only_when_due(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path
) -> None:
    """Uploads proportional to the change: an invocation uploads its two deltas, not a
    base; a fold comes once ``compact_after`` deltas wait. Requests stay bounded: a
    listing, the head, the base and fewer than ``compact_after`` deltas, two saves and,
    when one is due, a fold."""
    spec = make_spec(request, kind, tmp_path)
    runs = [invocation(tmp_path / f"call-{i}", open_backend(spec), i) for i in range(30)]
    folds = [f for _, _, f in runs]
    # 60 saves, two per invocation: a fold at every 8th waiting delta, never more often
    assert sum(folds) in (7, 8), runs
    assert folds.count(0) >= 20, runs
    for requests, uploaded, fold in runs[1:]:
        if not fold:
            assert uploaded < 1024, runs  # two deltas of a few hundred bytes
        bound = LISTING[kind] + 1 + COMPACT_AFTER + 2 + fold * (2 + FOLD_DELETES[kind])
        assert requests <= bound, runs
    final = KnowledgeMemory(tmp_path / "final", backend=open_backend(spec))
    assert len(final.entries()) == 30 * 2
    assert len(open_backend(spec).load_state().deltas) < COMPACT_AFTER


@pytest.mark.parametrize("kind", COUNTED)
def test_a_warm_process_revalidates_instead_of_downloading(
    request: pytest.FixtureRequest, kind: str, tmp_path: Path
) -> None:
    spec = make_spec(request, kind, tmp_path)
    scratch = tmp_path / "scratch"
    first = KnowledgeMemory(scratch, backend=open_backend(spec))
    first.remember("a fact worth keeping", persistent=True)
    first.remember("and a note")
    backend = open_backend(spec)
    with count_requests(backend.root) as requests:
        again = KnowledgeMemory(scratch, backend=backend)
    # a listing and the head: the base and the known deltas are not read again
    assert len(requests) == LISTING[kind] + 1, requests.calls
    assert {e.content for e in again.entries()} == {"a fact worth keeping", "and a note"}
    other = KnowledgeMemory(tmp_path / "other", backend=open_backend(spec))
    other.remember("from another function")
    backend = open_backend(spec)
    before = backend.load_state()
    with count_requests(backend.root) as requests:
        third = KnowledgeMemory(scratch, backend=backend)
    # listing, head and the one new delta; nothing written (nothing changed locally)
    assert len(requests) == LISTING[kind] + 2, requests.calls
    assert "from another function" in {e.content for e in third.entries()}
    after = backend.load_state()
    assert (after.version, after.deltas) == (before.version, before.deltas)


def test_a_warm_reopen_keeps_changes_made_after_the_last_save(tmp_path: Path) -> None:
    url = f"memory://warm/{tmp_path.name}.snapshot"
    scratch = tmp_path / "scratch"
    km = KnowledgeMemory(scratch, backend=FsspecBackend(url))
    km.remember("saved")
    (scratch / "later.txt").write_bytes(b"\xffwritten after the save")
    other = KnowledgeMemory(tmp_path / "other", backend=FsspecBackend(url))
    other.remember("concurrent")
    KnowledgeMemory(scratch, backend=FsspecBackend(url))
    assert (scratch / "later.txt").read_bytes() == b"\xffwritten after the save"
    check = KnowledgeMemory(tmp_path / "check", backend=FsspecBackend(url))
    assert (tmp_path / "check" / "later.txt").read_bytes() == b"\xffwritten after the save"
    assert {e.content for e in check.entries()} == {"saved", "concurrent"}


def test_compaction_threshold_is_reachable_and_checked(tmp_path: Path) -> None:
    url = f"memory://threshold/{tmp_path.name}.snapshot"
    km = KnowledgeMemory(tmp_path / "a", backend=FsspecBackend(url, compact_after=3))
    assert km._replica is not None and km._replica.compact_after == 3
    for i in range(7):
        km.remember(f"fact {i}")
    assert km._replica.folds == 2  # saves 3 and 6 folded
    assert len(FsspecBackend(url).load_state().deltas) == 1
    km2 = KnowledgeMemory(
        tmp_path / "b", backend=FsspecBackend(url, compact_after=3), snapshot_compact_after=50
    )
    assert km2._replica is not None and km2._replica.compact_after == 50
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidInputError):
            FsspecBackend(url, compact_after=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            KnowledgeMemory(tmp_path / "c", backend=FsspecBackend(url), snapshot_compact_after=bad)  # type: ignore[arg-type]


@pytest.mark.s3
def test_storage_options_mapping_reaches_s3(
    s3_root_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    url = f"{s3_root_url}/options.snapshot"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        km = KnowledgeMemory(
            tmp_path / "a", backend=FsspecBackend(url, storage_options=s3_storage_options)
        )
    km.remember("through storage_options")
    with pytest.warns(DeprecationWarning, match="storage_options"):
        legacy = FsspecBackend(url, **s3_storage_options)
    restored = KnowledgeMemory(tmp_path / "b", backend=legacy)
    assert [e.content for e in restored.entries()] == ["through storage_options"]
    with pytest.raises(InvalidInputError, match="given twice"), pytest.warns(DeprecationWarning):
        FsspecBackend(url, storage_options={"key": "a"}, key="b")
    with pytest.raises(InvalidInputError, match="mapping"):
        FsspecBackend(url, storage_options=[("key", "a")])  # type: ignore[arg-type]


@pytest.mark.redis
def test_redis_backend_takes_storage_options(redis_url: str, tmp_path: Path) -> None:
    from fsmemory.snapshot import RedisKnowledgeBackend

    backend = RedisKnowledgeBackend(
        "opts-user",
        url=f"{redis_url}/0",
        prefix="optstest:",
        storage_options={"socket_timeout": 5, "health_check_interval": 10},
    )
    KnowledgeMemory(tmp_path / "a", backend=backend).remember("kept")
    assert backend.client.connection_pool.connection_kwargs["socket_timeout"] == 5
    with pytest.raises(InvalidInputError, match="client or storage_options"):
        RedisKnowledgeBackend("x", client=backend.client, storage_options={"socket_timeout": 1})


@pytest.mark.s3
def test_credentials_and_endpoint_from_the_environment(
    s3_root_url: str, s3_storage_options: dict[str, Any], tmp_path: Path
) -> None:
    """``AWS_ENDPOINT_URL`` and the AWS key variables are enough (as in the README)."""
    url = f"{s3_root_url}/from-env.snapshot"
    code = (
        "import sys\n"
        "from fsmemory import KnowledgeMemory\n"
        "from fsmemory.snapshot import FsspecBackend\n"
        "km = KnowledgeMemory(sys.argv[2], backend=FsspecBackend(sys.argv[1]))\n"
        "km.remember('configured by the environment')\n"
    )
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": s3_storage_options["client_kwargs"]["endpoint_url"],
        "AWS_ACCESS_KEY_ID": s3_storage_options["key"],
        "AWS_SECRET_ACCESS_KEY": s3_storage_options["secret"],
    }
    subprocess.run(
        [sys.executable, "-c", code, url, str(tmp_path / "scratch")], env=env, check=True
    )
    restored = KnowledgeMemory(
        tmp_path / "check", backend=FsspecBackend(url, storage_options=s3_storage_options)
    )
    assert [e.content for e in restored.entries()] == ["configured by the environment"]


@pytest.mark.s3
def test_serverless_benchmark_runs(tmp_path: Path) -> None:
    """The benchmark's code path (no timing is checked)."""
    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_serverless.py"
    done = subprocess.run(
        [sys.executable, str(bench), "--entries", "20", "--invocations", "1"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| fsmemory handler |" in done.stdout and "| boto3 one blob |" in done.stdout


def test_a_scratch_folder_cleaned_between_warm_invocations_is_restored(tmp_path: Path) -> None:
    import shutil

    url = f"memory://cleaned/{tmp_path.name}.snapshot"
    scratch = tmp_path / "scratch"
    km = KnowledgeMemory(scratch, backend=FsspecBackend(url))
    km.remember("kept across invocations", persistent=True)
    shutil.rmtree(scratch)  # the handler frees its scratch space
    again = KnowledgeMemory(scratch, backend=FsspecBackend(url))
    assert [e.content for e in again.entries()] == ["kept across invocations"]
    scratch_files = sorted(p.name for p in scratch.rglob("*") if p.is_file())
    shutil.rmtree(scratch)
    scratch.mkdir()
    (scratch / "other.txt").write_text("a different folder now")
    third = KnowledgeMemory(scratch, backend=FsspecBackend(url))
    assert [e.content for e in third.entries()] == ["kept across invocations"]
    assert (scratch / "other.txt").read_text() == "a different folder now"
    check = KnowledgeMemory(tmp_path / "check", backend=FsspecBackend(url))
    assert [e.content for e in check.entries()] == ["kept across invocations"]
    assert scratch_files
