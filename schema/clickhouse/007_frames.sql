-- smolder's ClickHouse schema, version 7: each frame stored once, a stack as
-- the list of its frames' ids (docs/store.md "ClickHouse", measured by
-- bench/ch_bench). Same rules as 001.
--
-- 001's `stacks` row holds every frame's strings, so a flame graph's first call
-- fetched them all: the bench's day, 88 k stacks of some 30 frames, 93 MB of
-- rows for 104 k distinct frames. Here a stack is its id and its frames' ids
-- (root first) and a frame is one row; SQLite's dictionary has the same shape.
--
-- frames: id a 64-bit content hash of (kind, line, name, file) computed by the
-- collector (store/clickhouse/ingest.c), the frame's kind, name, file and line as
-- common/frame.h's struct frame. stack_frames: a stack's id (the same content
-- id as 001's, which the tiers' `stack` columns name) and its frames' ids.
-- Both collapse equal rows (ReplacingMergeTree by id): every ingest that stores
-- a stack inserts its stack_frames row, then the rows of its frames, copies of
-- the same content. The dictionary GC deletes a stack's rows from both
-- `stacks` and `stack_frames`, and frames that no stack_frames row names
-- (store/clickhouse/gc.c).
--
-- `stacks` stays: collectors of version 7 no longer write it, and read a stack
-- there only when stack_frames does not hold it (one stored before 7, or by a
-- collector not yet upgraded); the GC empties it as retention ages its stacks
-- out. Nothing is copied, so an upgrade takes no time.
CREATE TABLE IF NOT EXISTS frames (
	id UInt64,
	kind UInt8,
	name String,
	file String,
	line UInt32
) ENGINE = ReplacingMergeTree() ORDER BY id;

CREATE TABLE IF NOT EXISTS stack_frames (
	id UInt64,
	frames Array(UInt64)
) ENGINE = ReplacingMergeTree() ORDER BY id;
