"""Export the memories of a few agents' users to Parquet and ask DuckDB questions.

Run: python examples/query_with_duckdb.py [DEST]

Builds three users' memories under a temporary folder (a week of facts, some forgotten),
exports them with ``fsmemory.export.export_parquet`` (what ``fsmemory export SOURCE DEST``
does), then answers, with plain SQL and no fsmemory code:

1. How many facts were remembered per category per day?
2. Which topics do the agents remember most (from the facts' metadata), counting only
   facts that are still live (not forgotten since)?
3. Who forgets what: forget and eviction records per user.

Needs ``pip install 'fsmemory[parquet]' duckdb``. DEST defaults to a temporary folder;
any URL works for the export (``s3://bucket/exports``, ...), the queries here read local
files.
"""

from __future__ import annotations

import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from fsmemory import KnowledgeMemory
from fsmemory.export import export_parquet

TOPICS = {
    "preferences": ["editor", "language", "ui", "food"],
    "projects": ["billing", "search", "mobile app"],
    "people": ["manager", "team", "customers"],
    "tasks": ["deploy", "review", "hiring"],
}


class Clock:
    """A clock the example moves forward, so a week passes in a second."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 9, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def build_memories(root: Path) -> None:
    """Seven days of facts for three users, a few of them forgotten again."""
    rng = random.Random(7)
    for user in ("alice", "bob", "carol"):
        clock = Clock()
        km = KnowledgeMemory(root / user, clock=clock)
        for _ in range(7):
            ids = []
            for _ in range(rng.randint(3, 9)):
                category = rng.choice(list(TOPICS))
                topic = rng.choice(TOPICS[category])
                ids.append(
                    km.remember(
                        f"{user} mentioned the {topic}",
                        category=category,
                        persistent=category == "preferences",
                        importance=round(rng.random(), 2),
                        metadata={"topic": topic, "source": "chat"},
                    )
                )
                clock.now += timedelta(minutes=rng.randint(5, 90))
            if rng.random() < 0.6:
                km.forget(rng.choice(ids))
            clock.now = clock.now.replace(hour=9, minute=0) + timedelta(days=1)


def show(query: str) -> None:
    """Run ``query`` with DuckDB and print the result as a table."""
    relation = duckdb.sql(query)
    if relation is not None:
        relation.show()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        users = Path(tmp) / "users"
        build_memories(users)
        dest = sys.argv[1] if len(sys.argv) > 1 else str(Path(tmp) / "export")
        report = export_parquet(str(users), dest)
        print(report.summary())
        # An incremental re-run finds nothing new.
        print(export_parquet(str(users), dest).summary())

        facts = f"read_parquet('{dest}/memory/*/*.parquet', hive_partitioning=true)"
        print("\n1. Facts remembered per category per day")
        show(
            f"""
            PIVOT (SELECT date, category FROM {facts} WHERE op = 'remember')
            ON category USING count(*) GROUP BY date ORDER BY date
            """
        )

        print("2. Most-remembered topics (facts still live)")
        show(
            f"""
            WITH remembered AS (SELECT * FROM {facts} WHERE op = 'remember'),
                 forgotten AS (SELECT id FROM {facts} WHERE op = 'forget')
            SELECT json_extract_string(metadata, '$.topic') AS topic,
                   count(*) AS facts,
                   count(DISTINCT root) AS users,
                   round(avg(importance), 2) AS avg_importance
            FROM remembered ANTI JOIN forgotten USING (id)
            GROUP BY topic ORDER BY facts DESC, topic LIMIT 5
            """
        )

        print("3. Forget records per user")
        show(
            f"""
            SELECT root AS user, reason, count(*) AS records
            FROM {facts} WHERE op = 'forget' GROUP BY ALL ORDER BY user
            """
        )

        print("4. Agent events (none in these memories: this glob also works on an empty table)")
        events = f"read_parquet('{dest}/events/**', hive_partitioning = false)"
        show(f"SELECT count(*) AS events FROM {events}")

        # The same export in 2 shards, as 2 machines would run it, into one dataset.
        sharded = str(Path(tmp) / "sharded")
        rows = sum(export_parquet(str(users), sharded, shard=(i, 2)).rows for i in range(2))
        print(f"2 shards exported {rows} rows into one dataset; one run exported {report.rows}")


if __name__ == "__main__":
    main()
