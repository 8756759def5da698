-- schema.sql — the ulpgym results database (SQLite, WAL). Migration 1.
-- One writer (the sweep's parent process). Column names are meant for people running
-- plain sqlite3 queries; the views at the end answer the usual questions.

CREATE TABLE IF NOT EXISTS runs (
    run_id        INTEGER PRIMARY KEY,
    started_at    TEXT NOT NULL,             -- UTC, ISO 8601
    finished_at   TEXT,
    status        TEXT NOT NULL DEFAULT 'running',  -- running | done | interrupted
    plan_name     TEXT,
    plan_path     TEXT,
    plan_hash     TEXT,                      -- hash of the plan file and the spaces it read
    backend       TEXT NOT NULL,             -- sim | sim:<mutant> | plugin:<path> | replay
    git_rev       TEXT,                      -- source revision ulpgym was built from
    host          TEXT,
    cores         INTEGER,
    shard         TEXT,                      -- K/N or NULL
    oracle_prec   INTEGER,                   -- MPFR working precision, bits
    sample        INTEGER,                   -- elements checked per output, 0 = all
    command       TEXT,                      -- the command line that started the run
    n_cases       INTEGER NOT NULL DEFAULT 0,
    n_pass        INTEGER NOT NULL DEFAULT 0,
    n_fail        INTEGER NOT NULL DEFAULT 0,
    n_other       INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS cases (
    case_id       TEXT PRIMARY KEY,          -- 16 hex digits, hash of spec_json
    op            TEXT NOT NULL,
    op_group      TEXT NOT NULL,
    dtype         TEXT NOT NULL,
    spec_json     TEXT NOT NULL,             -- canonical spec: rebuilds the inputs bit for bit
    origin        TEXT NOT NULL DEFAULT 'plan',  -- plan | fuzz | manual
    first_seen    TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS results (
    run_id           INTEGER NOT NULL REFERENCES runs(run_id),
    case_id          TEXT NOT NULL REFERENCES cases(case_id),
    verdict          TEXT NOT NULL,          -- PASS FAIL SKIP ERROR CRASH TIMEOUT SHAPE NONFINITE
    primary_standard TEXT NOT NULL,
    kernel_ms        REAL,
    oracle_ms        REAL,
    oracle_fallbacks INTEGER,                -- elements the certified fast path sent to MPFR
    message          TEXT,
    PRIMARY KEY (run_id, case_id)
);

CREATE TABLE IF NOT EXISTS metrics (
    run_id          INTEGER NOT NULL,
    case_id         TEXT NOT NULL,
    output          TEXT NOT NULL,
    dtype           TEXT NOT NULL,
    n_checked       INTEGER NOT NULL,
    n_total         INTEGER NOT NULL,
    nonfinite_mismatch INTEGER NOT NULL,
    max_abs         REAL, max_abs_index INTEGER,
    max_rel         REAL, max_rel_index INTEGER,
    max_ulp         REAL, max_ulp_index INTEGER,
    mean_ulp        REAL,
    mere            REAL,
    mare            REAL,
    rmse            REAL,
    eb              REAL,                     -- error balance
    small_err_ratio REAL,
    cosine          REAL,
    bench_max_abs   REAL, bench_mere REAL, bench_mare REAL, bench_rmse REAL, bench_small_err_ratio REAL,
    PRIMARY KEY (run_id, case_id, output)
);

CREATE TABLE IF NOT EXISTS verdicts (
    run_id      INTEGER NOT NULL,
    case_id     TEXT NOT NULL,
    standard    TEXT NOT NULL,
    verdict     TEXT NOT NULL,               -- PASS FAIL NA
    thresholds  TEXT NOT NULL,               -- JSON: per output, the thresholds applied and the figures met
    PRIMARY KEY (run_id, case_id, standard)
);

CREATE INDEX IF NOT EXISTS results_by_case ON results(case_id);
CREATE INDEX IF NOT EXISTS cases_by_op ON cases(op, dtype);

CREATE VIEW IF NOT EXISTS pass_rate AS
SELECT r.run_id, c.op_group AS "group", c.op, c.dtype,
       COUNT(*) AS cases,
       SUM(r.verdict = 'PASS') AS passed,
       SUM(r.verdict = 'FAIL') AS failed,
       SUM(r.verdict NOT IN ('PASS', 'FAIL')) AS other,
       ROUND(100.0 * SUM(r.verdict = 'PASS') / COUNT(*), 2) AS pass_pct
FROM results r JOIN cases c USING (case_id)
GROUP BY r.run_id, c.op_group, c.op, c.dtype;

CREATE VIEW IF NOT EXISTS failures AS
SELECT r.run_id, r.case_id, c.op, c.dtype, r.verdict, r.primary_standard, r.message
FROM results r JOIN cases c USING (case_id)
WHERE r.verdict <> 'PASS';
