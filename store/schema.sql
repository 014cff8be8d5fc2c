-- idalloc schema for MySQL and MariaDB (TiDB and Vitess accept it too).
-- Applying it again is harmless: tables are created only when missing and
-- the seeded row is inserted only when absent.
--
-- Keys and tokens compare byte for byte (utf8mb4_bin): app_tag "Order" and
-- "order" are two tags, and a lease token differing only in case is a
-- different token, as on the embedded SQLite store.
--
-- Times are DATETIME(3) in UTC (idalloc sets the session time_zone to
-- '+00:00'), never TIMESTAMP, which cannot hold a time after 2038-01-19
-- 03:14:07 UTC and would then stop every fetch. idalloc -init-schema turns
-- the TIMESTAMP columns of a table created by an older schema into
-- DATETIME(3); without it, a start on such a table fails and names the
-- ALTER TABLE that does it.
--
-- Number formats (docs/api.md §7): format is sequential, fixed_length or
-- scrambled, length the digit count of the last two, format_key a scrambled
-- tag's secret key, never shown by any API, log or metric. A segments table
-- made before these columns still works, every row sequential; idalloc
-- -init-schema adds them (ALTER TABLE segments ADD COLUMN ...), and until
-- then creating a fixed_length or scrambled tag fails naming that ALTER.
--
-- start is a tag's first ID as created (POST /tags, HSET), shown by INFO.
-- NULL on rows made before the column, whose first ID nothing records:
-- their start is unknown. -init-schema adds it like the format columns.
--
-- format_spec is a dated tag's settings beyond length and start (period,
-- time zone, prefix, separator; docs/api.md §11), as idalloc encodes them; ''
-- for every other format. -init-schema adds it like the format columns.
--
-- update_time is set by every write of a row (fetch, give-back, create,
-- update, advance), and the index segments_update_time finds the rows
-- changed since a moment: each instance reloads its tag list by what
-- changed, not by reading every row (docs/api.md §13). -init-schema adds the
-- index to a table made before it; without it the same rows are found by
-- reading the whole table.
--
-- This file is split into statements at a ';' that ends a line: keep every
-- statement's ';' at the end of its last line and none elsewhere.

CREATE TABLE IF NOT EXISTS segments (
  app_tag     VARCHAR(64)  NOT NULL,
  max_id      BIGINT       NOT NULL DEFAULT 0,
  step        BIGINT       NOT NULL,
  description VARCHAR(256) NOT NULL DEFAULT '',
  update_time DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  format      VARCHAR(16)  NOT NULL DEFAULT 'sequential',
  length      INT          NOT NULL DEFAULT 0,
  format_key  VARBINARY(32) NULL,
  start       BIGINT       NULL,
  format_spec VARCHAR(255) NOT NULL DEFAULT '',
  PRIMARY KEY (app_tag),
  KEY segments_update_time (update_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT IGNORE INTO segments (app_tag, max_id, step, description, start)
VALUES ('test_business', 0, 100000, 'test_business', 1);

-- The counters of dated tags (docs/api.md §11): one row per tag and period
-- stamp (yyyyMMdd and the like, as a number), max_id the highest sequence
-- number handed out in that period, moved by the same compare-and-set as
-- segments.max_id. A database made before it lacks only this table:
-- -init-schema creates it, and a start without it is refused only while
-- segments holds dated tags (whose counters would be missing).
CREATE TABLE IF NOT EXISTS segment_periods (
  app_tag     VARCHAR(64) NOT NULL,
  stamp       BIGINT      NOT NULL,
  max_id      BIGINT      NOT NULL,
  update_time DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (app_tag, stamp)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per worker ID ever leased in a cluster. token '' marks a released
-- ID; expires_at is UTC by the database's clock (idalloc sets the session
-- time_zone to '+00:00'); last_timestamp_ms never decreases, so the next
-- holder of an ID starts after every timestamp the previous one used.
CREATE TABLE IF NOT EXISTS worker_leases (
  cluster           VARCHAR(64)  NOT NULL,
  worker_id         BIGINT       NOT NULL,
  token             VARCHAR(32)  NOT NULL DEFAULT '',
  holder            VARCHAR(255) NOT NULL DEFAULT '',
  expires_at        DATETIME(3)  NOT NULL,
  last_timestamp_ms BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (cluster, worker_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The snowflake layout of each cluster whose instances generate IDs: all of
-- them must agree, since two layouts (or two epochs) in one cluster can
-- compose the same ID from different parts. The first instance records it;
-- an instance with another layout refuses to start.
CREATE TABLE IF NOT EXISTS worker_layouts (
  cluster     VARCHAR(64) NOT NULL,
  epoch_ms    BIGINT      NOT NULL,
  worker_bits INT         NOT NULL,
  PRIMARY KEY (cluster)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Per-tag access tokens (docs/api.md §12): token_hash is the SHA-256 of the
-- token in hex, never the token itself, which is shown once at create;
-- app_tags the tags it may take IDs of, comma-separated (a tag holds no
-- comma). With alloc_auth on, every instance reloads this table every
-- segment.tag_refresh. A database made before it lacks this table and
-- audit_log only: -init-schema creates them, and a start without them is
-- refused only with alloc_auth on.
CREATE TABLE IF NOT EXISTS alloc_tokens (
  name        VARCHAR(64) NOT NULL,
  token_hash  CHAR(64)    NOT NULL,
  app_tags    TEXT        NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (name),
  UNIQUE KEY alloc_tokens_hash (token_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The audit log (docs/api.md §12): one row per admin change (tag.create,
-- tag.update, token.create, token.revoke, advance), at by the database's
-- clock, caller as the front end knew it (admin-token or loopback, and the
-- remote address), subject the tag or token name, detail what changed as
-- JSON, never a secret.
CREATE TABLE IF NOT EXISTS audit_log (
  id      BIGINT       NOT NULL AUTO_INCREMENT,
  at      DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  caller  VARCHAR(255) NOT NULL,
  action  VARCHAR(32)  NOT NULL,
  subject VARCHAR(64)  NOT NULL,
  detail  TEXT         NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The region this database serves (docs/api.md §13): with region.count R above
-- 1, each region has a database of its own, whose tags' IDs are those ≡
-- region_id (mod R). The first instance of a region records it (id is
-- always 1: one row, inserted once, never changed); an instance configured
-- as another region, or as none, refuses to start. A database of a single
-- region has no row. A database made before it lacks only this table:
-- -init-schema creates it, and only a start with region.count above 1
-- needs it.
CREATE TABLE IF NOT EXISTS idalloc_region (
  id           INT         NOT NULL,
  region_count BIGINT      NOT NULL,
  region_id    BIGINT      NOT NULL,
  recorded_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
