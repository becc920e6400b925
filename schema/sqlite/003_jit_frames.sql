-- smolder store, migration 003: frames of kind 4, JIT code (FRAME_JIT, named by a
-- process's perf map; common/frame.h).
--
-- frames.kind was CHECKed to 0..3, and SQLite cannot change a CHECK in place, so the
-- table is made anew with 0..4 and its rows copied with their ids: stacks refer to
-- frames by id, which never changes. Nothing else refers to the table (no trigger,
-- view or foreign key), and the frames dictionary is small beside the samples.

CREATE TABLE frames_v3 (
	id INTEGER PRIMARY KEY,
	kind INTEGER NOT NULL CHECK (kind BETWEEN 0 AND 4), -- enum frame_kind
	name INTEGER NOT NULL REFERENCES strings (id),
	file INTEGER NOT NULL REFERENCES strings (id),       -- the "" string when none
	line INTEGER NOT NULL,
	UNIQUE (kind, name, file, line)
);

INSERT INTO frames_v3 (id, kind, name, file, line) SELECT id, kind, name, file, line FROM frames;

DROP TABLE frames;

ALTER TABLE frames_v3 RENAME TO frames;
