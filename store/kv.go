package store

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// key names a persisted block.
type key struct {
	fp   string
	hash [32]byte
}

// blockInfo is what the index keeps per block, for KVStats.
type blockInfo struct {
	bytes  int64
	tokens int32
}

// fpIndex is the index of one fingerprint: its blocks and their totals.
type fpIndex struct {
	blocks map[[32]byte]blockInfo
	stats  KVStats // Blocks, Bytes, Tokens of blocks; Dropped unused
}

// KVStats describes persisted blocks: how many, their K/V bytes and their
// tokens, how many blocks were dropped instead of written (the queue was
// full or the write failed) and how many failed verification on load
// since Open.
type KVStats struct {
	Blocks  int
	Bytes   int64
	Tokens  int64
	Dropped int64
	Corrupt int64
}

// loadIndex reads every block's key and size from the metadata table.
func loadIndex(db *sql.DB) (map[string]*fpIndex, error) {
	rows, err := db.Query("SELECT fingerprint, hash, bytes, length(tokens) FROM kv_blocks")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	idx := map[string]*fpIndex{}
	for rows.Next() {
		var (
			fp      string
			hash    []byte
			n, tlen int64
		)
		if err := rows.Scan(&fp, &hash, &n, &tlen); err != nil {
			return nil, err
		}
		if len(hash) != 32 {
			return nil, fmt.Errorf("%w: kv_blocks hash of %d bytes", errCheckFailed, len(hash))
		}
		addToIndex(idx, key{fp, [32]byte(hash)}, blockInfo{n, int32(tlen / 4)})
	}
	return idx, rows.Err()
}

// addToIndex and removeFromIndex keep an index and its totals; the caller
// holds idxMu for writing (or owns idx).
func addToIndex(idx map[string]*fpIndex, k key, b blockInfo) {
	f := idx[k.fp]
	if f == nil {
		f = &fpIndex{blocks: map[[32]byte]blockInfo{}}
		idx[k.fp] = f
	}
	if _, ok := f.blocks[k.hash]; ok {
		return
	}
	f.blocks[k.hash] = b
	f.stats.Blocks++
	f.stats.Bytes += b.bytes
	f.stats.Tokens += int64(b.tokens)
}

// removeFromIndex reports whether k was in idx.
func removeFromIndex(idx map[string]*fpIndex, k key) bool {
	f := idx[k.fp]
	if f == nil {
		return false
	}
	b, ok := f.blocks[k.hash]
	if !ok {
		return false
	}
	delete(f.blocks, k.hash)
	f.stats.Blocks--
	f.stats.Bytes -= b.bytes
	f.stats.Tokens -= int64(b.tokens)
	if f.stats.Blocks == 0 {
		delete(idx, k.fp)
	}
	return true
}

// HasBlocks is how many leading hashes of fp are stored, stopping at the
// first missing one. It reads the in-memory index only. The index knows
// the blocks stored at OpenKV and those this process has written since; a
// block another process deleted since may still be reported, and
// LoadBlock then returns ErrNotFound.
func (s *KVStore) HasBlocks(fp string, hashes [][32]byte) int {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	f := s.idx[fp]
	if f == nil {
		return 0
	}
	for i, h := range hashes {
		if _, ok := f.blocks[h]; !ok {
			return i
		}
	}
	return len(hashes)
}

func (s *KVStore) has(k key) bool {
	return s.HasBlocks(k.fp, [][32]byte{k.hash}) == 1
}

// KVStats sums the blocks of fingerprint fp in the index ("" for all
// fingerprints). Dropped and Corrupt count all fingerprints.
func (s *KVStore) KVStats(fp string) KVStats {
	s.idxMu.RLock()
	var st KVStats
	for name, f := range s.idx {
		if fp == "" || name == fp {
			st.Blocks += f.stats.Blocks
			st.Bytes += f.stats.Bytes
			st.Tokens += f.stats.Tokens
		}
	}
	s.idxMu.RUnlock()
	st.Dropped = s.dropped.Load()
	st.Corrupt = s.corrupted.Load()
	return st
}

const loadQuery = `SELECT b.id, b.tokens, b.checksum, d.data
FROM kv_blocks b JOIN kv_data d ON d.id = b.id
WHERE b.fingerprint = ? AND b.hash = ?`

// LoadBlock reads block (fp, hash) into dst. The stored token IDs must
// equal tokens, the stored data must be len(dst) bytes and the checksum
// must match; otherwise it returns an error wrapping ErrCorrupt, forgets
// the block and deletes its row (write-behind: gone after Flush), so that
// it is recomputed and saved again. A block that is not stored returns
// ErrNotFound. On error dst's contents are unspecified. A successful load
// marks the block used now (written behind).
func (s *KVStore) LoadBlock(fp string, hash [32]byte, tokens []int32, dst []byte) error {
	k := key{fp, hash}
	if s.remote != nil && !s.has(k) {
		return s.loadRemote(k, tokens, dst)
	}
	if s.kv == nil {
		return fmt.Errorf("%w: block %x (K/V persistence is off)", ErrNotFound, hash[:6])
	}
	rows, err := s.loadStmt.Query(fp, hash[:])
	if err != nil {
		return s.loadFailed(k, 0, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return s.loadFailed(k, 0, err)
		}
		s.forget(k)
		return fmt.Errorf("%w: block %x of model %.12s", ErrNotFound, hash[:6], fp)
	}
	var (
		id                int64
		stored, sum, data sql.RawBytes
	)
	if err := rows.Scan(&id, &stored, &sum, &data); err != nil {
		return s.loadFailed(k, 0, err)
	}
	switch {
	case !tokensEqual(stored, tokens):
		return s.corrupt(k, id, "its token IDs differ from the prompt's")
	case len(data) != len(dst):
		return s.corrupt(k, id, fmt.Sprintf("%d bytes stored, %d expected", len(data), len(dst)))
	}
	copy(dst, data)
	if c := checksum(stored, dst); string(c[:]) != string(sum) {
		return s.corrupt(k, id, "checksum mismatch")
	}
	s.touch(id)
	return nil
}

// loadFailed handles a failed query: corruption in the file is the
// block's corruption (and marks the file for replacement at the next
// Open); anything else is returned as is.
func (s *KVStore) loadFailed(k key, id int64, err error) error {
	if isCorrupt(err) {
		s.markDamaged(err)
		return s.corrupt(k, id, err.Error())
	}
	return fmt.Errorf("store: load block %x: %w", k.hash[:6], err)
}

// corrupt forgets a block that failed verification and queues the
// deletion of its row (id 0: unknown, delete by key). The first since
// Open is logged as a warning, later ones at debug level (a damaged file
// fails every block it holds); KVStats.Corrupt and Close's log line
// count them all, each block once (a load racing with the first, or
// made before its deletion is written, finds it forgotten already).
func (s *KVStore) corrupt(k key, id int64, why string) error {
	first := s.forget(k)
	s.q.push(op{kind: opDelete, key: k, id: id}, 0)
	err := fmt.Errorf("%w: block %x of model %.12s: %s; deleted, it will be recomputed", ErrCorrupt, k.hash[:6], k.fp, why)
	if !first {
		return err
	}
	if s.corrupted.Add(1) == 1 {
		s.log.Warn("store: a persisted K/V block failed verification; it is recomputed (later ones are counted, and logged at debug level)", "file", filepath.Join(s.home, kvFile), "err", err)
	} else {
		s.log.Debug("store: a persisted K/V block failed verification", "err", err)
	}
	return err
}

// forget removes k from the index and reports whether it was there.
func (s *KVStore) forget(k key) bool {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	return removeFromIndex(s.idx, k)
}

// markDamaged writes the marker that makes the next Open move kvcache.db
// aside; SQLite reported the file itself damaged, which no row deletion
// repairs.
func (s *KVStore) markDamaged(cause error) {
	path := filepath.Join(s.home, kvFile) + damagedSuffix
	if _, err := os.Stat(path); err == nil {
		return
	}
	if err := os.WriteFile(path, []byte(cause.Error()+"\n"), 0o600); err != nil {
		s.log.Warn("store: cannot mark the persisted K/V cache damaged", "err", err)
		return
	}
	s.log.Warn("store: persisted K/V cache is damaged; it will be replaced at the next start", "file", filepath.Join(s.home, kvFile), "err", cause)
}

// SaveBlock queues block (fp, hash) for writing and returns at once; the
// store owns data from then on (tokens is copied). A block already stored
// or queued is ignored, and so is a block larger than a write batch (1/16
// of the budget, at most 64 MiB); when the queue holds QueueBytes, the
// block is dropped and counted in KVStats.Dropped. The block's last use
// is now.
func (s *KVStore) SaveBlock(fp string, hash, parent [32]byte, tokens []int32, data []byte, dtype string) {
	k := key{fp, hash}
	enc := encodeTokens(tokens)
	if s.remote != nil && !s.has(k) {
		s.remote.save(k, parent, enc, data, dtype)
	}
	s.saveLocal(k, parent, enc, data, dtype)
}

// saveLocal is SaveBlock's part in kvcache.db; tokens are encoded.
func (s *KVStore) saveLocal(k key, parent [32]byte, tokens, data []byte, dtype string) {
	if s.kv == nil || int64(len(data)) > batchBytes(s.kvMax) || s.has(k) {
		return
	}
	o := op{
		kind:     opSave,
		key:      k,
		parent:   parent,
		tokens:   tokens,
		data:     data,
		dtype:    dtype,
		lastUsed: s.now().UnixNano(),
	}
	if !s.q.push(o, int64(len(data))) {
		s.dropped.Add(1)
	}
}

// Flush waits until every block queued, row deletion and last-use update
// made before the call is written (or has failed, and been logged), in
// kvcache.db and in the shared tier.
func (s *KVStore) Flush() {
	if s.kv != nil {
		s.q.flush()
	}
	if s.remote != nil {
		s.remote.Flush()
	}
}

// FetchBlocks is HasBlocks, then, when the shared tier is set and the
// file lacks some of hashes, one round trip to it for the rest of the
// chain: the count covers the blocks found there too, which LoadBlock
// then verifies and loads (and keeps in kvcache.db). runner.PrefixFetcher.
func (s *KVStore) FetchBlocks(fp string, hashes [][32]byte) int {
	n := s.HasBlocks(fp, hashes)
	if s.remote == nil || n == len(hashes) {
		return n
	}
	return n + s.remote.fetch(fp, hashes[n:])
}

// loadRemote loads block k from the shared tier's last fetch and, when
// it verifies, keeps a copy in kvcache.db.
func (s *KVStore) loadRemote(k key, tokens []int32, dst []byte) error {
	parent, dtype, err := s.remote.load(k.fp, k.hash, tokens, dst)
	if err != nil {
		return err
	}
	s.saveLocal(k, parent, encodeTokens(tokens), append([]byte(nil), dst...), dtype)
	return nil
}

// RemoteStats are the shared tier's counters; ok is false without one.
func (s *KVStore) RemoteStats() (st RemoteStats, ok bool) {
	if s.remote == nil {
		return st, false
	}
	return s.remote.Stats(), true
}

// encodeTokens is tokens as little-endian int32.
func encodeTokens(tokens []int32) []byte {
	b := make([]byte, 4*len(tokens))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(t))
	}
	return b
}

func tokensEqual(stored []byte, tokens []int32) bool {
	if len(stored) != 4*len(tokens) {
		return false
	}
	for i, t := range tokens {
		if binary.LittleEndian.Uint32(stored[4*i:]) != uint32(t) {
			return false
		}
	}
	return true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is CRC-32C || CRC-32 (IEEE) of tokens || data, 8 bytes
// big-endian. Two CRCs with different polynomials give 64 bits against
// torn or flipped bytes at about ten times SHA-256's speed, which on a
// long restored prompt costs as much as recomputing it (numbers:
// bench/results/2026-12-02-comment-numbers.md). It guards
// against damage, not against an adversary: identity is the key and the
// token comparison.
func checksum(tokens, data []byte) [8]byte {
	c := crc32.Update(crc32.Checksum(tokens, castagnoli), castagnoli, data)
	i := crc32.Update(crc32.ChecksumIEEE(tokens), crc32.IEEETable, data)
	var out [8]byte
	binary.BigEndian.PutUint32(out[:4], c)
	binary.BigEndian.PutUint32(out[4:], i)
	return out
}
