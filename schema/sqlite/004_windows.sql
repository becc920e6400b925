-- smolder store, migration 004: what each stored window is, so an answer can say
-- which time it covers and turn samples into CPU time.
--
-- samples rows say when (window_start) but not for how long nor at what sampling
-- period: a batch carries both (window_seconds, period_ns), and they were dropped.
-- windows(window_start, period_ns, seconds, batches) keeps them: one row per stored
-- window start, sampling period and length, counting the batches stored in it.
-- Two agents sampling the same window at 99 Hz and 49 Hz give two rows; the same
-- agent's next window another row. The key is the primary key of a WITHOUT ROWID
-- table, so the rows of a time range are one b-tree range, as for samples.
--
-- Maintained with the samples, in the same transactions:
--   ingest      one upsert per batch (not per sample): (window_start as stored,
--               that is the coarse bucket's start below the downsampling
--               watermark, period_ns, seconds), batches + 1. A batch below the
--               watermark is stored with its coarse bucket's length.
--   downsample  when a coarse bucket [B, E) is done (the watermark moves to E), the
--               rows of the windows in [B, E) become one row per period,
--               (B, period, E - B), their batches summed: the bucket's length and
--               the periods merged into it.
--   retention   rows with window_start < now - retention are deleted with the
--               samples of those windows, once those are gone.
-- Periods and lengths are stored as sent, saturated to INT64_MAX (a hostile agent
-- can send any uint64); a period of 0 means unknown, and a query shows no CPU time
-- for it. The table is not per label set: a batch holds many label sets, and one
-- upsert per batch is what keeps ingest cost unchanged; store__windows() therefore
-- answers for all agents' windows in a range (store/store.h).
--
-- Existing databases get no rows for their old windows (their periods were never
-- stored): queries over them say the period is unknown.

CREATE TABLE windows (
	window_start INTEGER NOT NULL,                         -- unix seconds, as samples'
	period_ns INTEGER NOT NULL,                            -- sampling period; 0 unknown
	seconds INTEGER NOT NULL,                              -- the window's length
	batches INTEGER NOT NULL,                              -- batches stored in it
	PRIMARY KEY (window_start, period_ns, seconds)
) WITHOUT ROWID;
