"""The store's tables, as numbered migrations applied in order and recorded.

Each migration is a list of statements written once for both databases; ``{serial}`` stands for an
auto-numbered 64-bit key column (``INTEGER PRIMARY KEY AUTOINCREMENT`` in SQLite, ``BIGSERIAL
PRIMARY KEY`` in PostgreSQL) and ``{error_type}`` for the ``type`` in the JSON of a run's
``error`` (the run aliased ``r``). A new version appends a migration; an applied one is never
edited.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE sessions (
                seq {serial},
                id TEXT NOT NULL UNIQUE,
                agent_name TEXT NOT NULL,
                status TEXT NOT NULL,
                transcript TEXT NOT NULL,
                parent_session_id TEXT,
                depth INTEGER NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX sessions_parent ON sessions (parent_session_id)",
            """CREATE TABLE runs (
                seq {serial},
                id TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                agent_name TEXT NOT NULL,
                status TEXT NOT NULL,
                input TEXT NOT NULL,
                idempotency_key TEXT UNIQUE,
                request_hash TEXT,
                result TEXT,
                error TEXT,
                lease_owner TEXT,
                lease_expires_at DOUBLE PRECISION,
                claims INTEGER NOT NULL,
                cancel_requested INTEGER NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                started_at DOUBLE PRECISION,
                finished_at DOUBLE PRECISION
            )""",
            "CREATE INDEX runs_status ON runs (status, seq)",
            "CREATE INDEX runs_session ON runs (session_id, seq)",
            """CREATE TABLE attempts (
                run_id TEXT NOT NULL,
                number INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (run_id, number)
            )""",
            """CREATE TABLE events (
                id {serial},
                run_id TEXT NOT NULL,
                type TEXT NOT NULL,
                data TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX events_run ON events (run_id, id)",
        ),
    ),
    (
        3,
        (
            # The turns a run's runner has finished, as the library's RunProgress (JSON): a
            # runner taking the run over continues after them instead of paying them again.
            "ALTER TABLE runs ADD COLUMN progress TEXT",
        ),
    ),
    (
        4,
        (
            # One delivery of a run's end to its webhook, kept until it is delivered or a day of
            # retries is up. ``id`` is the event id the receiver dedupes by; ``body`` the exact
            # bytes sent (and signed) on every attempt. A deliverer claims a due row by moving
            # ``next_attempt_at`` past its timeout, so a deliverer lost mid-attempt hands the
            # row back when that time comes.
            """CREATE TABLE webhook_deliveries (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL UNIQUE,
                url TEXT NOT NULL,
                event TEXT NOT NULL,
                body TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL,
                next_attempt_at DOUBLE PRECISION NOT NULL,
                lease_owner TEXT,
                last_status_code INTEGER,
                last_error TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                delivered_at DOUBLE PRECISION
            )""",
            "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)",
        ),
    ),
    (
        6,
        (
            # The sessions list pages by seq under each of its filters, so a page is read from
            # an index however many sessions there are (created_at: since and until).
            "CREATE INDEX sessions_agent ON sessions (agent_name, seq)",
            "CREATE INDEX sessions_status ON sessions (status, seq)",
            "CREATE INDEX sessions_created ON sessions (created_at)",
            # Every error type a run has ended with, kept as runs end: the list's filter
            # choices, without reading every run on every view.
            "CREATE TABLE error_types (type TEXT PRIMARY KEY)",
            "INSERT INTO error_types (type) SELECT DISTINCT {error_type} FROM runs r "
            "WHERE r.error IS NOT NULL AND {error_type} IS NOT NULL",
            # Per agent and UTC day, the analytics review's figures of the runs that ended
            # (store/rollups.py), and its keyed counts: failures by type, retry reasons and
            # latency histogram buckets, per day and for all days together (day ''). Filled
            # from the stored events right after.
            """CREATE TABLE rollups (
                agent_id TEXT NOT NULL,
                day TEXT NOT NULL,
                runs BIGINT NOT NULL,
                completed BIGINT NOT NULL,
                attempted BIGINT NOT NULL,
                first_ok BIGINT NOT NULL,
                rescued BIGINT NOT NULL,
                retries BIGINT NOT NULL,
                incomplete BIGINT NOT NULL,
                input_tokens BIGINT NOT NULL,
                output_tokens BIGINT NOT NULL,
                events BIGINT NOT NULL,
                unrecognised BIGINT NOT NULL,
                run_ms_max DOUBLE PRECISION,
                turn_ms_max DOUBLE PRECISION,
                PRIMARY KEY (agent_id, day)
            )""",
            """CREATE TABLE rollup_counts (
                agent_id TEXT NOT NULL,
                day TEXT NOT NULL,
                kind TEXT NOT NULL,
                name TEXT NOT NULL,
                total BIGINT NOT NULL,
                PRIMARY KEY (agent_id, day, kind, name)
            )""",
        ),
    ),
    (
        7,
        (
            # The model calls of every worker using the store, per limit key (provider:model),
            # for the limits they share (store/call_limits.py): a slot is in flight while
            # ``expires_at`` is set and not past (a worker lost mid-call frees it then), and
            # counts for the requests and tokens of the 60 seconds after ``counted_at``: when
            # it was taken, then when its call ended (the provider counted the request at some
            # moment in between, so counting from the end never lets one more in too early).
            """CREATE TABLE call_slots (
                id TEXT PRIMARY KEY,
                limit_key TEXT NOT NULL,
                counted_at DOUBLE PRECISION NOT NULL,
                expires_at DOUBLE PRECISION,
                tokens BIGINT NOT NULL
            )""",
            "CREATE INDEX call_slots_key ON call_slots (limit_key, counted_at)",
            # One row per limit key: the row a slot is taken under (locked on PostgreSQL, so
            # two workers never both take the last slot), and until when a 429 paused the key.
            """CREATE TABLE call_limit_keys (
                limit_key TEXT PRIMARY KEY,
                paused_until DOUBLE PRECISION NOT NULL
            )""",
        ),
    ),
    (
        8,
        # Each thing stored once (``sql.stored_result``, ``stored_attempt``,
        # ``stored_transcript``): a run's result keeps the number of its attempts and the
        # length of its transcript instead of copies, and no copy of its answer or error; an
        # attempt and its event no copy of the raw output's JSON; a tool call no parsed
        # arguments. The stored rows are rewritten right after (``SqlBase._store_once``).
        (),
    ),
    (
        9,
        (
            # A run's recorded turns, one record a row holding only what it adds
            # (store/turns.py), so a turn's write costs that turn's size, not the whole run's.
            # ``runs.progress`` is no longer written: what it holds is moved here right after
            # (``SqlBase._turns_apart``); the column stays, as dropping one needs SQLite 3.35.
            """CREATE TABLE run_turns (
                run_id TEXT NOT NULL,
                number INTEGER NOT NULL,
                turns INTEGER NOT NULL,
                attempts INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (run_id, number)
            )""",
        ),
    ),
    (
        10,
        (
            # Runs sent through a provider's batch API (``POST /batches``): a batch's runs carry
            # its id, so a run claim skips them and a runner claims the batch whole instead.
            "ALTER TABLE runs ADD COLUMN batch_id TEXT",
            "CREATE INDEX runs_batch ON runs (batch_id, seq)",
            # One row a batch: its items (each item's id with its session and run), and the
            # lease a runner holds it under, as a run's.
            """CREATE TABLE batches (
                seq {serial},
                id TEXT NOT NULL UNIQUE,
                agent_name TEXT NOT NULL,
                status TEXT NOT NULL,
                items TEXT NOT NULL,
                lease_owner TEXT,
                lease_expires_at DOUBLE PRECISION,
                claims INTEGER NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                finished_at DOUBLE PRECISION
            )""",
            "CREATE INDEX batches_status ON batches (status, seq)",
            # Each provider batch a batch's runner created, recorded before it is polled, with
            # each item's custom id and body digest: a runner taking the batch over re-attaches
            # to it instead of paying for it again. ``counts``: the provider's request counts
            # at the last poll.
            """CREATE TABLE batch_submissions (
                batch_id TEXT NOT NULL,
                provider_batch_id TEXT NOT NULL,
                provider TEXT NOT NULL,
                items TEXT NOT NULL,
                counts TEXT,
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (batch_id, provider_batch_id)
            )""",
        ),
    ),
    (
        11,
        (
            # Most runs have no batch and most sessions no parent: their index entries held
            # only NULLs, which no query looks up, and every new run and session wrote them (a
            # page each). Partial indexes keep just the rows a lookup by batch or by parent
            # finds (``batch_id = ?``, ``parent_session_id IN (...)`` imply NOT NULL).
            "DROP INDEX runs_batch",
            "CREATE INDEX runs_batch ON runs (batch_id, seq) WHERE batch_id IS NOT NULL",
            "DROP INDEX sessions_parent",
            "CREATE INDEX sessions_parent ON sessions (parent_session_id, seq) "
            "WHERE parent_session_id IS NOT NULL",
        ),
    ),
    (
        12,
        (
            # Every session of an agent begins with the same system message: each distinct one
            # is kept once, under the digest of its text (``sql.split_transcript``), and a
            # session's row names it in ``system_digest`` instead of holding it. A row written
            # before keeps its system message inline (``system_digest`` NULL) until its session
            # is next written.
            """CREATE TABLE system_messages (
                digest TEXT PRIMARY KEY,
                message TEXT NOT NULL
            )""",
            "ALTER TABLE sessions ADD COLUMN system_digest TEXT",
        ),
    ),
    (
        13,
        (
            # The analytics read a window of days (``day >= ?``) or the all-days sums
            # (``day = ''``); keyed by agent first, every view scanned every agent's every day
            # kept, a table that grows with the days a service has run (pruning keeps rollups).
            # A run's end updates the counts of rows that exist (the day never changes), so these
            # entries are written once per agent, day and bucket, not per run.
            "CREATE INDEX rollups_day ON rollups (day)",
            "CREATE INDEX rollup_counts_day ON rollup_counts (day)",
        ),
    ),
    (
        14,
        (
            # A deletion deletes the system messages its sessions named that no other session
            # names (store/retention.py): this finds whether one still does without a scan.
            "CREATE INDEX sessions_system ON sessions (system_digest)",
        ),
    ),
)
"""``(version, statements)``, oldest first."""
