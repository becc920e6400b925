-- smolder store, migration 011: stacks.hash in 32 bits.
--
-- 007 gave every stack a 64-bit FNV-1a hash of its blob, found through the
-- stacks_hash index. SQLite stores an integer in the fewest bytes that hold it, so
-- a 64-bit hash took 8 bytes in the row and 8 more in the index: for the busy
-- host's day (83 k stacks, bench/store_bench when 011 was written) 0.67 MB, 0.06 B a
-- stored (window, label set, stack) row. The hash only picks the candidate rows
-- whose blobs ingest then compares with its own (a collision costs one more blob
-- comparison, never a wrong id), so 32 bits do the same work: from 011,
-- store_stack_hash() (store/sqlite/db.h) is the 64-bit FNV-1a folded to 32 bits
-- (high half XOR low half, as a signed integer: 4 bytes in the row and the index).
--
-- Every row's hash is computed again with smolder_stack_hash(), the function the
-- store registers on its connection (007 calls it too, so a file migrated from
-- before 007 gets the 32-bit hashes there already and this statement rewrites the
-- same values). One transaction: a kill leaves 010's hashes, and the next writer's
-- open does it again. The freed space goes to the free list (no VACUUM).

UPDATE stacks SET hash = smolder_stack_hash(frames);
