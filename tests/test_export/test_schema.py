"""The documented schema, the public surface and the package's layering."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import fsmemory.export as export
from fsmemory.errors import MissingDependencyError
from fsmemory.export import (
    EVENT_COLUMNS,
    MEMORY_COLUMNS,
    SCHEMA_VERSION_KEY,
    events_schema,
    memory_schema,
)

pa = pytest.importorskip("pyarrow")


def test_all_is_the_public_surface() -> None:
    public = {n for n in dir(export) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(export, n)).__name__ == "module"}
    assert len(set(export.__all__)) == len(export.__all__)
    assert set(export.__all__) == public - modules - {"annotations"}
    for name in export.__all__:
        obj = getattr(export, name)
        if callable(obj):
            assert obj.__doc__, name


def test_memory_schema_types() -> None:
    schema = memory_schema()
    ts = pa.timestamp("us", tz="UTC")
    expected = {
        "root": pa.string(), "source_file": pa.string(), "line": pa.int64(),
        "op": pa.string(), "id": pa.string(), "timestamp": ts, "category": pa.string(),
        "content": pa.string(), "persistent": pa.bool_(), "importance": pa.float64(),
        "ttl_days": pa.float64(), "expires_at": ts, "metadata": pa.string(),
        "reason": pa.string(),
    }  # fmt: skip
    assert {f.name: f.type for f in schema} == expected
    assert [f.name for f in schema] == [c.name for c in MEMORY_COLUMNS]
    assert [f.nullable for f in schema] == [c.nullable for c in MEMORY_COLUMNS]
    assert not schema.field("id").nullable and schema.field("content").nullable
    assert schema.metadata[SCHEMA_VERSION_KEY.encode()] == b"1"
    assert all(f.metadata[b"description"] for f in schema)


def test_events_schema_types() -> None:
    schema = events_schema()
    assert [f.name for f in schema] == [c.name for c in EVENT_COLUMNS]
    assert schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert schema.field("data").type == pa.string()
    assert schema.metadata[b"fsmemory_table"] == b"events"


def test_missing_pyarrow_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsmemory.export import export_parquet

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingDependencyError) as info:
        export_parquet("memory://nowhere", "memory://nowhere-out")
    assert info.value.extra == "parquet"
    assert "fsmemory[parquet]" in str(info.value)


ALLOWED = (
    "fsmemory.fs",
    "fsmemory.memory",
    "fsmemory.errors",
    "fsmemory._jsonutil",
    "fsmemory._speedups",
)


def test_export_imports_only_lower_layers() -> None:
    folder = Path(export.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            found: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module == "fsmemory":
                found = [f"fsmemory.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                found = [node.module]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            for name in found:
                if name.startswith("fsmemory") and not name.startswith("fsmemory.export"):
                    ok = any(name == a or name.startswith(a + ".") for a in ALLOWED)
                    assert ok, f"{path.name} imports {name}"


def test_readme_documents_every_column() -> None:
    text = (Path(export.__file__).parent / "README.md").read_text()
    for column in (*MEMORY_COLUMNS, *EVENT_COLUMNS):
        assert f"| `{column.name}` | {column.type} | {'yes' if column.nullable else 'no'} |" in text
