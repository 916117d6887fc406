"""The SQLite frontier's tables and indexes, and how a file made by an older manners is brought up to them.

Kept apart from ``sqlite_frontier`` (which leases, settles and commits) so that the layout of
the file, what each release added to it and the migration read in one place: a change to the
schema is a change here and to ``SCHEMA_VERSION``.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    authority TEXT NOT NULL,
    state TEXT NOT NULL,
    depth INTEGER NOT NULL,
    parent TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0,
    not_before REAL NOT NULL DEFAULT 0,
    owner TEXT,
    lease_until REAL,
    outcome TEXT,
    settled_at REAL
);
CREATE INDEX IF NOT EXISTS urls_queue ON urls (authority, not_before, id) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS urls_leases ON urls (lease_until) WHERE state = 'in_flight';
CREATE TABLE IF NOT EXISTS authorities (
    authority TEXT PRIMARY KEY,
    queued INTEGER NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0,
    parked_until REAL NOT NULL DEFAULT 0,
    park_reason TEXT,
    eligible_at REAL,
    last_leased REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS authorities_turn ON authorities (last_leased) WHERE eligible_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS authorities_eligible ON authorities (eligible_at) WHERE eligible_at IS NOT NULL;
-- the ready order: most queued first (the biggest hosts bound a crawl), then least recently leased
CREATE INDEX IF NOT EXISTS authorities_size ON authorities (queued DESC, last_leased)
    WHERE eligible_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS authorities_parked ON authorities (parked_until) WHERE parked_until > 0;
CREATE TABLE IF NOT EXISTS outcomes (outcome TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fingerprints (
    host TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, first_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS workers (
    worker TEXT PRIMARY KEY, last_seen REAL NOT NULL, info TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS holds (
    authority TEXT PRIMARY KEY, token TEXT NOT NULL, until REAL NOT NULL
) WITHOUT ROWID;
"""


# Columns added since the first release, with their declarations: every file gains them when it is
# opened (``migrate``), a new one as one an older manners made; ``user_version`` then says it is done.
ADDED = {
    "urls": ("visits INTEGER NOT NULL DEFAULT 0", "interval REAL", "digest TEXT", "capture_at REAL",
             "misses INTEGER NOT NULL DEFAULT 0", "token TEXT"),
    "authorities": ("kept INTEGER NOT NULL DEFAULT 0",),
}  # fmt: skip
SCHEMA_VERSION = 2  # 2: urls.token, the lease's token (fencing)
# Revisits waiting for their due time, for ``revisits`` (status): new URLs have visits = 0.
DUE_INDEX = "CREATE INDEX IF NOT EXISTS urls_due ON urls (not_before) WHERE state = 'queued' AND visits > 0"


# When an authority next has a URL to lease: its earliest queued not_before, or its park's end
# (NULL with nothing queued).  Used inside UPDATE authorities, after the URL rows changed.
ELIGIBLE = (
    "(SELECT max(u.not_before, authorities.parked_until) FROM urls u"
    " WHERE u.authority = authorities.authority AND u.state = 'queued' ORDER BY u.not_before LIMIT 1)"
)


def migrate(db: sqlite3.Connection) -> None:
    """Bring a frontier file made by an older manners up to this schema: the columns it lacks (a
    constant default rewrites only the schema, not the table, so this is instant on millions of
    URLs), their index, and ``user_version`` so the next open skips this."""
    for table, columns in ADDED.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column.split()[0] not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    db.execute(DUE_INDEX)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
