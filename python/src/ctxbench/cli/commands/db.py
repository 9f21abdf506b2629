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
    """create=False: the command only reads (a read-only store opens read-only).
    No output of the command may then land on the store or the files SQLite
    keeps beside it."""
    from ctxbench.cli.output_files import keep_apart
    from ctxbench.store.dialects import COMPANIONS

    store = Store.open(db, create=create)
    if store.path is not None:
        keep_apart(store.path, "the store")
        for suffix, what in COMPANIONS.items():
            keep_apart(store.path.with_name(store.path.name + suffix), f"the store's {what}")
    return store
