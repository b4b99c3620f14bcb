package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// flights lets the pulls of one process share each download: the first
// pull of a blob starts it, later pulls of the same blob wait for it and
// read its counters. The download runs until it ends or every pull
// waiting for it has gone.
var flights = struct {
	mu sync.Mutex
	m  map[string]*flight // guarded by mu: running downloads by partial file
}{m: map[string]*flight{}}

// flight is one shared download.
type flight struct {
	total     atomic.Int64 // bytes; -1 while unknown
	completed atomic.Int64 // bytes on disk

	done   chan struct{} // closed when the download has ended
	digest string        // written before done is closed
	err    error         // written before done is closed

	key     string             // in flights.m
	cancel  context.CancelFunc // stops the download
	waiters int                // guarded by flights.mu
}

// join returns the flight downloading f into o.Home, starting it if none
// runs, and counts the caller as one of its waiters. at is the flight's
// bytes when joined, before a new one's download can move them: a pull's
// first report of a layer says where it began (0 for a new flight),
// however fast the first bytes arrive.
func (o *Options) join(f fetch) (fl *flight, at int64) {
	key := o.Home + "\x00" + f.key
	flights.mu.Lock()
	defer flights.mu.Unlock()
	if fl, ok := flights.m[key]; ok {
		fl.waiters++
		return fl, fl.completed.Load()
	}
	ctx, cancel := context.WithCancel(context.Background())
	fl = &flight{key: key, done: make(chan struct{}), cancel: cancel, waiters: 1}
	fl.total.Store(f.size)
	flights.m[key] = fl
	go func() {
		digest, err := o.downloadBlob(ctx, f, fl)
		flights.mu.Lock()
		if flights.m[key] == fl {
			delete(flights.m, key)
		}
		flights.mu.Unlock()
		fl.digest, fl.err = digest, err
		cancel()
		close(fl.done)
	}()
	return fl, 0
}

// wait returns the flight's outcome, or ctx's error when ctx ends first;
// the last waiter to leave stops the download (its bytes stay on disk)
// and returns once it has stopped, so that nothing writes in the home
// after the pull that started it has returned.
func (fl *flight) wait(ctx context.Context) (string, error) {
	select {
	case <-fl.done:
		return fl.digest, fl.err
	case <-ctx.Done():
		flights.mu.Lock()
		fl.waiters--
		last := fl.waiters == 0
		if last { // abandoned: a later pull starts afresh (and resumes)
			fl.cancel()
			if flights.m[fl.key] == fl {
				delete(flights.m, fl.key)
			}
		}
		flights.mu.Unlock()
		if last {
			<-fl.done
		}
		return "", ctx.Err()
	}
}

// hashFile returns the sha256 digest and size of f's contents.
func hashFile(f *os.File) (string, int64, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, 1<<62), make([]byte, 4<<20))
	if err != nil {
		return "", n, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), n, nil
}
