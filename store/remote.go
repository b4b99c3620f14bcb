package store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// RemoteKV is the shared prefix tier: full K/V blocks in Redis, written
// behind by every server of a fleet and fetched by any of them on a miss,
// so that a prefix is computed once per fleet. A KVStore given one
// (KVStore.SetRemote) consults it after its own file.
//
// Redis is not trusted. A value is a block in the persisted store's
// terms (fingerprint, hash, parent, dtype, token IDs, data, checksum)
// sealed with HMAC-SHA256 under the fleet's key; a block is used only if
// the seal verifies and its fingerprint, hash, token IDs, length and
// checksum are the ones asked for. Redis's failures are never the
// request's: every call has a deadline, and a slow, full or absent Redis
// means the block is computed.
//
// Its methods are safe for concurrent use: mu guards pending; the write
// queue has its own lock; counters are atomic.
type RemoteKV struct {
	rdb  *redis.Client
	key  []byte
	ttl  time.Duration
	wait time.Duration // deadline of one fetch or one write batch
	log  *slog.Logger

	mu      sync.Mutex
	pending map[key][]byte // sealed blocks of the last fetch per fingerprint, until loaded

	q        remoteQueue
	done     chan struct{} // closed when the writer returns
	hits     atomic.Int64  // blocks restored from Redis
	rejected atomic.Int64  // blocks that failed verification (logged once, then at debug level)
	failed   atomic.Int64  // calls that failed or ran past their deadline
	dropped  atomic.Int64  // blocks not written: queue full or the write failed
	down     atomic.Bool   // the last call failed (logged once per episode)
}

// RemoteOptions configure OpenRemote.
type RemoteOptions struct {
	// URL is redis://[user:password@]host:port/db (rediss:// for TLS):
	// FOLIO_KV_REMOTE.
	URL string
	// Key is the fleet's secret, at least 16 bytes: FOLIO_KV_REMOTE_KEY.
	Key []byte
	// TTL of a block after its last write or fetch; 0: 24 h. Eviction
	// before that is Redis's (maxmemory with an LRU policy).
	TTL time.Duration
	// Timeout bounds every socket read and write, and a fetch of up to
	// 64 blocks or a write batch (a longer fetch gets one Timeout per 64
	// blocks); 0: 500 ms.
	Timeout time.Duration
	// QueueBytes bounds the blocks waiting to be written; 0: 256 MiB.
	QueueBytes int64
	Log        *slog.Logger
}

// ErrRemoteKey is returned by OpenRemote for a missing or short key.
var ErrRemoteKey = errors.New("store: the shared K/V tier needs a key")

// maxFetch bounds the blocks one fetch asks for (a long prompt's rest is
// computed, or fetched at its next admission).
const maxFetch = 512

// OpenRemote connects to Redis lazily (the first call dials) and starts
// the writer. It fails only for a bad URL or key, never because Redis is
// down: a fleet starts before its cache does.
func OpenRemote(opt RemoteOptions) (*RemoteKV, error) {
	if len(opt.Key) < 16 {
		return nil, fmt.Errorf("%w: set FOLIO_KV_REMOTE_KEY to a secret of at least 16 bytes that every server of the fleet shares (it has %d)", ErrRemoteKey, len(opt.Key))
	}
	ro, err := redis.ParseURL(opt.URL)
	if err != nil {
		return nil, fmt.Errorf("store: FOLIO_KV_REMOTE=%q: %v: use redis://host:port/db", RedactURL(opt.URL), err)
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 500 * time.Millisecond
	}
	if opt.TTL <= 0 {
		opt.TTL = 24 * time.Hour
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	quietRedis.Do(func() { redis.SetLogger(quietLogger{}) })
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opt.Timeout, opt.Timeout, opt.Timeout
	ro.PoolTimeout, ro.MaxRetries, ro.ContextTimeoutEnabled = opt.Timeout, -1, true
	r := &RemoteKV{rdb: redis.NewClient(ro), key: opt.Key, ttl: opt.TTL, wait: opt.Timeout, log: opt.Log,
		pending: map[key][]byte{}, done: make(chan struct{})}
	r.q.init(opt.QueueBytes)
	go r.writeLoop()
	return r, nil
}

// RedactURL is a Redis URL with its user and password hidden, for logs
// and messages.
func RedactURL(u string) string {
	if i, j := bytes.IndexByte([]byte(u), '@'), bytes.Index([]byte(u), []byte("://")); i > j && j >= 0 {
		return u[:j+3] + "…" + u[i:]
	}
	return u
}

// quietLogger silences go-redis's own log (a line per failed dial, on
// stderr, for as long as Redis is down): RemoteKV logs an outage once,
// through its caller's logger.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

var quietRedis sync.Once

// redisKey names a block in Redis.
func redisKey(k key) string { return "folio:kv:" + k.fp + ":" + hex.EncodeToString(k.hash[:]) }

// RemoteStats are the shared tier's counters since OpenRemote.
type RemoteStats struct {
	Hits, Rejected, Failed, Dropped int64
}

// Stats returns the counters.
func (r *RemoteKV) Stats() RemoteStats {
	return RemoteStats{Hits: r.hits.Load(), Rejected: r.rejected.Load(), Failed: r.failed.Load(), Dropped: r.dropped.Load()}
}

// fetch asks Redis, in one round trip, for the blocks of hashes (a
// prompt's chain after what the caller has) and keeps those found, up to
// the first missing one, for load. It returns how many leading blocks it
// found; 0 when Redis fails or is past the deadline. A fetch refreshes the
// TTL of the blocks it finds.
func (r *RemoteKV) fetch(fp string, hashes [][32]byte) int {
	hashes = hashes[:min(len(hashes), maxFetch)]
	// each socket read has r.wait (a Redis that stops answering fails
	// within it); the whole transfer has r.wait per 64 blocks
	ctx, cancel := context.WithTimeout(context.Background(), r.wait*time.Duration(1+len(hashes)/64))
	defer cancel()
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(hashes))
	for i, h := range hashes {
		cmds[i] = pipe.GetEx(ctx, redisKey(key{fp, h}), r.ttl)
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		r.callFailed("fetch", err)
		return 0
	}
	r.callOK()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.pending { // the last fetch's leftovers of this model
		if k.fp == fp {
			delete(r.pending, k)
		}
	}
	n := 0
	for i, c := range cmds {
		v, err := c.Bytes()
		if err != nil {
			break
		}
		r.pending[key{fp, hashes[i]}] = v
		n++
	}
	return n
}

// load verifies the fetched block (fp, hash) and copies its data to dst;
// it returns the block's parent and dtype for the local store. A block
// not fetched is ErrNotFound; one that fails verification is ErrCorrupt,
// logged (the first at warning level) and counted.
func (r *RemoteKV) load(fp string, hash [32]byte, tokens []int32, dst []byte) (parent [32]byte, dtype string, err error) {
	k := key{fp, hash}
	r.mu.Lock()
	v, ok := r.pending[k]
	delete(r.pending, k)
	r.mu.Unlock()
	if !ok {
		return parent, "", fmt.Errorf("%w: block %x of model %.12s is not in the shared tier", ErrNotFound, hash[:6], fp)
	}
	b, why := r.open(v)
	switch {
	case why != "":
	case b.fp != fp || b.hash != hash:
		why = "it names another block"
	case !tokensEqual(b.tokens, tokens):
		why = "its token IDs differ from the prompt's"
	case len(b.data) != len(dst):
		why = fmt.Sprintf("%d bytes stored, %d expected", len(b.data), len(dst))
	}
	if why != "" {
		err := fmt.Errorf("%w: shared block %x of model %.12s: %s; not used, it is recomputed", ErrCorrupt, hash[:6], fp, why)
		if r.rejected.Add(1) == 1 {
			r.log.Warn("store: a block from the shared K/V tier failed verification (later ones are counted, and logged at debug level)", "err", err)
		} else {
			r.log.Debug("store: a block from the shared K/V tier failed verification", "err", err)
		}
		return parent, "", err
	}
	copy(dst, b.data)
	r.hits.Add(1)
	return b.parent, b.dtype, nil
}

// save queues a block for writing to Redis; data is the caller's no more.
func (r *RemoteKV) save(k key, parent [32]byte, tokens, data []byte, dtype string) {
	if !r.q.push(remoteOp{k, parent, tokens, data, dtype}) {
		r.dropped.Add(1)
	}
}

// Flush waits until the blocks queued before the call are written (or
// dropped).
func (r *RemoteKV) Flush() { r.q.flush() }

// Close writes what the queue holds (each batch within the deadline) and
// closes the connections.
func (r *RemoteKV) Close() error {
	r.q.close()
	<-r.done
	return r.rdb.Close()
}

// writeLoop writes batches of queued blocks, each batch one pipelined
// round trip of SETs with the TTL.
func (r *RemoteKV) writeLoop() {
	defer close(r.done)
	for {
		ops, seq, ok := r.q.take()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.wait)
		pipe := r.rdb.Pipeline()
		for _, o := range ops {
			pipe.Set(ctx, redisKey(o.key), r.seal(o), r.ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			r.dropped.Add(int64(len(ops)))
			r.callFailed("write", err)
		} else {
			r.callOK()
		}
		cancel()
		r.q.finish(ops, seq)
	}
}

func (r *RemoteKV) callFailed(what string, err error) {
	r.failed.Add(1)
	if !r.down.Swap(true) {
		r.log.Warn("store: the shared K/V tier failed; prompts are computed until it answers again", "call", what, "err", err)
	}
}

func (r *RemoteKV) callOK() {
	if r.down.Swap(false) {
		r.log.Info("store: the shared K/V tier answers again")
	}
}

// A sealed block is
//
//	"FKV1" | u16 len(fp) fp | hash[32] | parent[32] | u16 len(dtype) dtype |
//	u32 len(tokens) tokens (int32 LE) | u32 len(data) data | checksum[8] | HMAC-SHA256[32]
//
// the HMAC over everything before it, under the fleet's key.
const sealMagic = "FKV1"

// remoteBlock is an opened sealed block; tokens are little-endian int32.
type remoteBlock struct {
	fp           string
	hash, parent [32]byte
	dtype        string
	tokens, data []byte
}

func (r *RemoteKV) seal(o remoteOp) []byte {
	var b bytes.Buffer
	b.Grow(len(sealMagic) + 2 + len(o.key.fp) + 64 + 2 + len(o.dtype) + 8 + len(o.tokens) + len(o.data) + 8 + sha256.Size)
	b.WriteString(sealMagic)
	binary.Write(&b, binary.LittleEndian, uint16(len(o.key.fp)))
	b.WriteString(o.key.fp)
	b.Write(o.key.hash[:])
	b.Write(o.parent[:])
	binary.Write(&b, binary.LittleEndian, uint16(len(o.dtype)))
	b.WriteString(o.dtype)
	binary.Write(&b, binary.LittleEndian, uint32(len(o.tokens)))
	b.Write(o.tokens)
	binary.Write(&b, binary.LittleEndian, uint32(len(o.data)))
	b.Write(o.data)
	sum := checksum(o.tokens, o.data)
	b.Write(sum[:])
	m := hmac.New(sha256.New, r.key)
	m.Write(b.Bytes())
	return m.Sum(b.Bytes())
}

// open checks v's seal and layout and returns its block, or why not.
func (r *RemoteKV) open(v []byte) (remoteBlock, string) {
	var b remoteBlock
	if len(v) < len(sealMagic)+sha256.Size || string(v[:len(sealMagic)]) != sealMagic {
		return b, "not a folio block"
	}
	body, mac := v[:len(v)-sha256.Size], v[len(v)-sha256.Size:]
	m := hmac.New(sha256.New, r.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), mac) {
		return b, "its HMAC does not verify under FOLIO_KV_REMOTE_KEY (written without the key, or altered)"
	}
	p := body[len(sealMagic):]
	take := func(n int) []byte {
		if n > len(p) {
			p = nil
			return nil
		}
		out := p[:n]
		p = p[n:]
		return out
	}
	u16 := func() int {
		x := take(2)
		if x == nil {
			return -1
		}
		return int(binary.LittleEndian.Uint16(x))
	}
	u32 := func() int {
		x := take(4)
		if x == nil {
			return -1
		}
		return int(binary.LittleEndian.Uint32(x))
	}
	b.fp = string(take(u16()))
	copy(b.hash[:], take(32))
	copy(b.parent[:], take(32))
	b.dtype = string(take(u16()))
	b.tokens = take(u32())
	b.data = take(u32())
	sum := take(8)
	if sum == nil || len(p) != 0 {
		return b, "its layout is damaged"
	}
	if c := checksum(b.tokens, b.data); !bytes.Equal(c[:], sum) {
		return b, "checksum mismatch"
	}
	return b, ""
}

// remoteOp is one block waiting to be written.
type remoteOp struct {
	key    key
	parent [32]byte
	tokens []byte
	data   []byte
	dtype  string
}

// remoteQueue is the write-behind queue of a RemoteKV; cond (on mu) is
// broadcast on push, on a finished batch and on close.
type remoteQueue struct {
	mu      sync.Mutex
	cond    sync.Cond
	ops     []remoteOp
	bytes   int64 // data bytes queued or being written
	max     int64
	enq     uint64 // pushes so far
	done    uint64 // pushes numbered <= done are written or dropped
	closing bool
}

func (q *remoteQueue) init(max int64) {
	if max <= 0 {
		max = defaultQueue
	}
	q.cond.L, q.max = &q.mu, max
}

// push queues o; false when the queue is full or closing.
func (q *remoteQueue) push(o remoteOp) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing || q.bytes+int64(len(o.data)) > q.max {
		return false
	}
	q.ops = append(q.ops, o)
	q.bytes += int64(len(o.data))
	q.enq++
	q.cond.Broadcast()
	return true
}

// take waits for blocks and removes up to 64 MiB of them; false when
// closing and empty.
func (q *remoteQueue) take() ([]remoteOp, uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ops) == 0 && !q.closing {
		q.cond.Wait()
	}
	if len(q.ops) == 0 {
		return nil, 0, false
	}
	n, size := 0, int64(0)
	for n < len(q.ops) && (n == 0 || size+int64(len(q.ops[n].data)) <= 64<<20) {
		size += int64(len(q.ops[n].data))
		n++
	}
	ops := q.ops[:n:n]
	q.ops = q.ops[n:]
	return ops, q.enq - uint64(len(q.ops)), true
}

func (q *remoteQueue) finish(ops []remoteOp, seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, o := range ops {
		q.bytes -= int64(len(o.data))
	}
	q.done = max(q.done, seq)
	q.cond.Broadcast()
}

func (q *remoteQueue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.enq
	for q.done < target && !(q.closing && len(q.ops) == 0 && q.bytes == 0) {
		q.cond.Wait()
	}
}

func (q *remoteQueue) close() {
	q.mu.Lock()
	q.closing = true
	q.cond.Broadcast()
	q.mu.Unlock()
}
