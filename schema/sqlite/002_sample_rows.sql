-- smolder store, migration 002: a maintained count of sample rows.
--
-- /metrics reads the number of rows of samples on every scrape, and count(*) is a
-- scan of the whole table under the collector's store lock. state.sample_rows is
-- kept by triggers on INSERT and DELETE instead (an upsert that adds to an
-- existing row is an UPDATE and changes no count), so it stays exact for every
-- connection that writes the file, and reading it is one row. The dictionary
-- sizes need no counter: their rows are never deleted, so max(id) is their count.

ALTER TABLE state ADD COLUMN sample_rows INTEGER NOT NULL DEFAULT 0;

UPDATE state SET sample_rows = (SELECT count(*) FROM samples) WHERE id = 1;

CREATE TRIGGER samples_count_insert AFTER INSERT ON samples BEGIN
	UPDATE state SET sample_rows = sample_rows + 1 WHERE id = 1;
END;

CREATE TRIGGER samples_count_delete AFTER DELETE ON samples BEGIN
	UPDATE state SET sample_rows = sample_rows - 1 WHERE id = 1;
END;
