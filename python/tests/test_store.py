"""The store: schema versions and migrations, transactions, refusals, concurrency.

Tests that take ``store_target`` run twice: on an SQLite file and on a
database of a real PostgreSQL server started for the test session
(conftest.pg_server); the rest are about SQLite files.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import sqlite3

import pytest
import sqlalchemy as sa

from conftest import real_environment, real_run, synthetic_run
from ctxbench.errors import BadInput, RecordError, StoreError
from ctxbench.records.machines import machine_name
from ctxbench.store.db import Store
from ctxbench.store.dialects import PostgreSQLDialect, is_url
from ctxbench.store.schema import (
    APPLICATION_ID,
    LATEST_VERSION,
    MIGRATIONS,
    RESULTS,
    RUNS,
    migration_statements,
)


def _raw(target: str) -> sa.Engine:
    """A plain SQLAlchemy engine on the store's database, behind ctxbench's back."""
    if is_url(target):
        return sa.create_engine(target.replace("postgresql://", "postgresql+psycopg://", 1))
    return sa.create_engine(f"sqlite:///{target}")


def _mark(conn: sa.Connection, version: int, app_id: int = APPLICATION_ID) -> None:
    """Write a store's mark and schema version as ctxbench keeps them."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA application_id = {app_id}")
        conn.exec_driver_sql(f"PRAGMA user_version = {version}")
        return
    table = PostgreSQLDialect.MARK_TABLE
    conn.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(application_id INTEGER NOT NULL, user_version INTEGER NOT NULL)"
    )
    conn.exec_driver_sql(f"DELETE FROM {table}")
    conn.exec_driver_sql(f"INSERT INTO {table} VALUES ({app_id}, {version})")


def _snapshot(target: str) -> object:
    """Everything in the database, to check that a refusal left it untouched."""
    engine = _raw(target)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            tables = sorted(inspector.get_table_names())
            rows = {
                name: sorted(map(tuple, conn.exec_driver_sql(f"SELECT * FROM {name}")))
                for name in tables
            }
            if conn.dialect.name == "sqlite":
                rows["pragmas"] = [
                    conn.exec_driver_sql(f"PRAGMA {name}").scalar_one()
                    for name in ("application_id", "user_version")
                ]
            return rows
    finally:
        engine.dispose()


def test_new_store_is_marked_and_at_latest_version(tmp_path):
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        assert store.schema_version() == LATEST_VERSION
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert connection.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION


def test_tables_match_what_the_migrations_create(store_target):
    with Store.open(store_target) as store:
        assert store.schema_version() == LATEST_VERSION
        columns = store.table_columns()
    assert columns == {table.name: list(table.columns.keys()) for table in (RUNS, RESULTS)}


def test_round_trip_keeps_records_verbatim(store_target):
    run = real_run("run_a.jsonl")
    with Store.open(store_target) as store:
        store.add_run(run, origin="import", label="machine A")
        loaded = store.load(run.run_id)
    assert loaded.records.all() == run.all()
    assert loaded.info.label == "machine A"
    assert loaded.info.origin == "import"
    assert loaded.info.complete and not loaded.info.interrupted
    assert loaded.info.n_results == len(run.results)


def _make_v1_store(target, runs):
    """A store as the first release wrote it: schema 1, no label column."""
    engine = _raw(target)
    with engine.begin() as conn:
        for statement in migration_statements(MIGRATIONS[0][1]):
            conn.exec_driver_sql(statement)
        _mark(conn, 1)
        for stored_at, run in runs:
            conn.execute(
                sa.text(
                    "INSERT INTO runs (run_id, started_at, origin, complete, interrupted,"
                    " stored_at, env) VALUES (:id, :started, 'run', 1, 0, :stored, :env)"
                ),
                {
                    "id": run.run_id,
                    "started": run.env["started_at"],
                    "stored": stored_at,
                    "env": json.dumps(run.env),
                },
            )
    engine.dispose()


def test_migration_from_version_1_keeps_runs(store_target):
    run = synthetic_run("old-run-0001", n_results=0)
    earlier = synthetic_run("zzz-older-0000", n_results=0)
    _make_v1_store(store_target, [("2026-01-02T00:00:00Z", run), ("2026-01-01T00:00:00Z", earlier)])
    with Store.open(store_target) as store:
        assert store.schema_version() == LATEST_VERSION
        loaded = store.load("old-run")
        assert loaded.run_id == "old-run-0001"
        assert loaded.info.label is None
        store.add_run(synthetic_run("new-run-0002"), origin="run", label="after migration")
        # Old runs keep the order they were stored in; new ones come after.
        assert [info.run_id for info in store.runs()] == [
            "zzz-older-0000",
            "old-run-0001",
            "new-run-0002",
        ]
        assert "label" in store.table_columns()["runs"]


def test_store_from_a_newer_ctxbench_is_refused_untouched(store_target):
    with Store.open(store_target) as store:
        store.add_run(synthetic_run("kept-0001"), origin="run")
    engine = _raw(store_target)
    with engine.begin() as conn:
        _mark(conn, LATEST_VERSION + 5)
    engine.dispose()
    before = _snapshot(store_target)
    with pytest.raises(StoreError, match="newer than this ctxbench"):
        Store.open(store_target)
    assert _snapshot(store_target) == before


def test_database_of_another_program_is_refused_untouched(store_target):
    engine = _raw(store_target)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
        conn.exec_driver_sql("INSERT INTO invoices (id, amount) VALUES (1, 12.5)")
    engine.dispose()
    before = _snapshot(store_target)
    for create in (True, False):
        with pytest.raises(StoreError, match="not a ctxbench store"):
            Store.open(store_target, create=create)
    assert _snapshot(store_target) == before


def test_database_marked_by_another_program_is_refused_untouched(store_target):
    with Store.open(store_target) as store:
        store.add_run(synthetic_run("kept-0001"), origin="run")
    engine = _raw(store_target)
    with engine.begin() as conn:
        _mark(conn, LATEST_VERSION, app_id=APPLICATION_ID + 1)
    engine.dispose()
    before = _snapshot(store_target)
    with pytest.raises(StoreError, match="not a ctxbench store"):
        Store.open(store_target)
    assert _snapshot(store_target) == before


def test_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 20)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a ctxbench store"):
        Store.open(path)
    assert path.read_bytes() == before


def test_damaged_sqlite_file_is_refused_untouched(tmp_path):
    path = tmp_path / "damaged.db"
    with Store.open(path) as store:
        store.add_run(synthetic_run("damaged-0001"), origin="run")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # wipe the schema page after the header
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"damaged|not a database"):
        Store.open(path)
    assert path.read_bytes() == before


def test_unusable_paths_give_clear_errors(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        Store.open(tmp_path)
    with pytest.raises(StoreError, match="is not a directory"):
        Store.open(tmp_path / "missing-dir" / "s.db")
    with pytest.raises(StoreError, match="no store at"):
        Store.open(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_failing_run_write_leaves_nothing_behind(store_target):
    good = synthetic_run("tx-run-0001", n_results=4)
    broken = copy.deepcopy(good)  # grouped whole: a record read is refused as it is read
    del broken.results[2]["verdict"]  # the third result cannot be written
    with Store.open(store_target) as store:
        with pytest.raises(KeyError):
            store.add_run(broken, origin="run")
        assert store.runs() == []
        assert store.result_count() == 0
        store.add_run(good, origin="run")
        assert len(store.load("tx-run").results) == 4


def test_duplicate_run_is_refused_and_first_copy_kept(store_target):
    with Store.open(store_target) as store:
        store.add_run(synthetic_run("dup-run-0001", n_results=2), origin="run", label="first")
        with pytest.raises(BadInput, match="already in"):
            store.add_run(synthetic_run("dup-run-0001", n_results=5), origin="import")
        loaded = store.load("dup-run-0001")
    assert loaded.info.label == "first" and len(loaded.results) == 2


def test_run_references(store_target):
    with Store.open(store_target) as store:
        for run_id in ("20260101T000000Z-aaaa1111", "20260101T000000Z-aaab2222", "x_y-00000001"):
            store.add_run(synthetic_run(run_id, n_results=1), origin="run")
        assert store.resolve("latest") == "x_y-00000001"
        assert store.resolve("20260101T000000Z-aaaa1111") == "20260101T000000Z-aaaa1111"
        assert store.resolve("20260101T000000Z-aaab") == "20260101T000000Z-aaab2222"
        with pytest.raises(BadInput, match="ambiguous"):
            store.resolve("20260101T000000Z-aaa")
        with pytest.raises(BadInput, match="no run 'zzz'"):
            store.resolve("zzz")
        # LIKE wildcards in a reference are literal characters.
        with pytest.raises(BadInput, match="no run"):
            store.resolve("x%")
        assert store.resolve("x_y") == "x_y-00000001"
        with pytest.raises(BadInput, match="no run"):
            store.resolve("X_Y")
        # A label names the latest run stored with it.
        store.add_run(synthetic_run("host-run-0001"), origin="run", label="vm1")
        store.add_run(synthetic_run("host-run-0002"), origin="run", label="vm1")
        assert store.resolve("vm1") == "host-run-0002"
        assert store.resolve("host-run-0001") == "host-run-0001"


def test_run_references_by_the_hash_part(store_target):
    """`show 2291752d`: what follows the timestamp names a run too, by a unique
    start of at least four characters; a label of that name comes first."""
    with Store.open(store_target) as store:
        for run_id in (
            "20260101T000000Z-beef0001",
            "20260102T000000Z-beef0002",
            "20260103T000000Z-cafe1234",
            "20260104T000000Z-d00d5678",
        ):
            store.add_run(synthetic_run(run_id, n_results=1), origin="run")
        store.add_run(synthetic_run("20260105T000000Z-0badf00d", n_results=1), "run", "cafe")
        assert store.resolve("beef0002") == "20260102T000000Z-beef0002"
        assert store.resolve("d00d") == "20260104T000000Z-d00d5678"
        assert store.resolve("cafe") == "20260105T000000Z-0badf00d"  # the label
        assert store.resolve("cafe1") == "20260103T000000Z-cafe1234"
        with pytest.raises(BadInput, match="no run 'd00'"):
            store.resolve("d00")  # shorter than MIN_HASH_PREFIX
        with pytest.raises(BadInput) as ambiguous:
            store.resolve("beef")
        message = str(ambiguous.value)
        assert "ambiguous" in message and ambiguous.value.exit_code == 2
        assert "20260101T000000Z-beef0001" in message and "20260102T000000Z-beef0002" in message
        with pytest.raises(BadInput, match="did you mean 20260104T000000Z-d00d5678"):
            store.resolve("20260104T000000Z-d00d5679")


def test_latest_on_an_empty_store(store_target):
    with Store.open(store_target) as store, pytest.raises(BadInput, match="no runs"):
        store.resolve("latest")


def _writer(path: str, worker: int, runs_each: int, errors) -> None:
    try:
        for index in range(runs_each):
            with Store.open(path) as store:
                run = synthetic_run(f"w{worker}-run-{index:04d}", n_results=20)
                store.add_run(run, origin="run")
    except BaseException as error:
        errors.put(f"writer {worker}: {error!r}")
        raise


def test_concurrent_writers_do_not_lose_runs(store_target):
    # Several processes create the same new store and write runs into it at once.
    path = store_target
    context = multiprocessing.get_context("fork")
    errors = context.Queue()
    workers = [context.Process(target=_writer, args=(str(path), w, 6, errors)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    reported = [errors.get(timeout=5) for _ in range(errors.qsize())] if not errors.empty() else []
    assert reported == []
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    with Store.open(path) as store:
        infos = store.runs()
        assert len(infos) == 24
        assert all(info.n_results == 20 for info in infos)
        assert store.schema_version() == LATEST_VERSION


def test_history_is_in_measurement_order_and_names_the_machine(tmp_path):
    # run_b was measured two seconds after run_a; import it first.
    a, b = real_run("run_a.jsonl"), real_run("run_b.jsonl")
    with Store.open(tmp_path / "order.db") as store:
        store.add_run(b, origin="import")
        store.add_run(a, origin="import")
        assert [info.run_id for info in store.runs()] == [a.run_id, b.run_id]
        assert store.resolve("latest") == b.run_id  # the most recently measured, not stored
        machine = store.runs()[0].machine
    assert machine == "vm · Intel(R) Xeon(R) Processor · KVM guest, in docker"


def test_machine_name_says_what_the_machine_is():
    def env(**virtualization):
        return real_environment(
            hostname="box", cpu={"model": "AMD  EPYC 7763"}, virtualization=virtualization
        )

    assert machine_name(env(detected="unknown")) == "box · AMD EPYC 7763"
    assert machine_name(env(detected="none", hypervisor_bit=False)) == (
        "box · AMD EPYC 7763 · bare metal"
    )
    assert machine_name(env(detected="microsoft", hypervisor_vendor="Microsoft Hv")) == (
        "box · AMD EPYC 7763 · Hyper-V guest"
    )
    assert machine_name(env(detected="microsoft", wsl=True)) == "box · AMD EPYC 7763 · WSL"
    assert machine_name(real_environment(hostname=None)).startswith("? · ")
    with pytest.raises(RecordError, match="detected"):
        real_environment(virtualization={"wsl": True})
