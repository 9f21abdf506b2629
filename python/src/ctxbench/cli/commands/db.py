"""The ``--db`` option every command shares, and opening the store it names."""

from __future__ import annotations

import click

from ctxbench.store.db import Store

db_option = click.option(
    "--db",
    "db",
    default=None,
    help="The store: an SQLite file, or a postgresql:// URL for a shared one "
    "(default: $CTXBENCH_DB, else the user data directory).",
)


def open_store(db: str | None, create: bool = True) -> Store:
    """create=False: the command only reads (a read-only store opens read-only)."""
    return Store.open(db, create=create)
