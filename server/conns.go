package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Connections are bounded two ways, so that slow clients cannot hold the
// server's file descriptors:
//
//   - a request body must keep arriving (slowBody): every BodyTimeout must
//     bring BodyMinBytes of it, or its end, else the read fails, the
//     request gets 408 and its connection is closed. The bound is the
//     connection's read deadline, moved on as the body arrives, so a blob
//     upload of any size passes while it makes progress, and cleared at
//     the body's end, so a streamed answer after it is never cut;
//   - the listener holds at most a number of connections at once
//     (LimitListener, serve's FOLIO_MAX_CONNECTIONS): further clients wait
//     in the kernel's backlog until one closes, so descriptors remain for
//     model files, blobs and the store.
//
// Headers are bounded by the http.Server's ReadHeaderTimeout (cmd/serve.go).

// Defaults of Config.BodyTimeout and Config.BodyMinBytes: a body must
// average over 2 KiB/s, far below any working link.
const (
	defaultBodyTimeout  = 30 * time.Second
	defaultBodyMinBytes = 64 << 10
)

var errSlowBody = errors.New("request body too slow")

// slowBody is a request body whose reads fail once a BodyTimeout passes
// without BodyMinBytes of it (or its end) arriving. It belongs to the
// handler's goroutine, as a request body does.
type slowBody struct {
	body     io.ReadCloser
	rc       *http.ResponseController
	header   http.Header // the response's: a body cut short closes its connection
	window   time.Duration
	minBytes int64
	now      func() time.Time
	got      int64 // bytes since the deadline was last moved
	ended    bool  // EOF or an error: the deadline is cleared, or spent
}

// boundBody gives r's body the deadline of its first window. A request
// without a body is left alone; one whose handler never reads its body is
// bounded too, when the server drains it after the handler returns.
func (s *Server) boundBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(s.cfg.Now().Add(s.cfg.BodyTimeout)); err != nil {
		return // not a connection (a test's recorder): nothing to hold
	}
	r.Body = &slowBody{body: r.Body, rc: rc, header: w.Header(), window: s.cfg.BodyTimeout, minBytes: s.cfg.BodyMinBytes, now: s.cfg.Now}
}

func (b *slowBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.got += int64(n)
	switch {
	case b.ended:
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The rest of the body may still come: the connection cannot
		// carry another request.
		b.ended = true
		b.header.Set("Connection", "close")
		return n, fmt.Errorf("%w: less than %d bytes of it arrived in %s; the connection is closed: send the body without pausing",
			errSlowBody, b.minBytes, b.window)
	case err != nil:
		// The body has ended: the deadline must not outlive it, or the
		// read by which net/http watches for the client leaving during a
		// long answer would fail at it and cancel the request (net/http
		// clears it too as it starts that read).
		b.ended = true
		b.rc.SetReadDeadline(time.Time{})
	case b.got >= b.minBytes:
		b.got = 0
		b.rc.SetReadDeadline(b.now().Add(b.window))
	}
	return n, err
}

func (b *slowBody) Close() error { return b.body.Close() }

// LimitListener returns ln holding at most max connections at once (max
// <= 0: ln itself). Accept waits while max are open, leaving further
// clients in the kernel's backlog; log is told when the cap is reached
// (once, and again after the count has fallen to half of it).
func LimitListener(ln net.Listener, max int, log *slog.Logger) net.Listener {
	if max <= 0 {
		return ln
	}
	if log == nil {
		log = slog.Default()
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), log: log}
}

// limitListener holds one token in slots per open connection.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{} // closed by Close: Accept stops waiting for a slot
	closeOnce sync.Once
	log       *slog.Logger

	mu     sync.Mutex // guards warned
	warned bool       // the cap was reached and the count has not fallen to half since
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.atCap()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, l: l}, nil
}

// atCap logs that new connections wait, once per time the cap is reached.
func (l *limitListener) atCap() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.warned {
		l.warned = true
		l.log.Warn("connection cap reached: new connections wait until one closes; raise FOLIO_MAX_CONNECTIONS if clients are legitimate",
			"max", cap(l.slots))
	}
}

func (l *limitListener) release() {
	<-l.slots
	if len(l.slots) <= cap(l.slots)/2 {
		l.mu.Lock()
		l.warned = false
		l.mu.Unlock()
	}
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed (the server may close twice).
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}

// DefaultMaxConnections is serve's connection cap without
// FOLIO_MAX_CONNECTIONS: half of the process's open-file limit
// (RLIMIT_NOFILE), leaving the other half to model files, blobs, the store
// and downloads; at most 65536 (memory bounds it beyond); 1024 where the
// limit is not known.
func DefaultMaxConnections() int {
	limit, ok := openFileLimit()
	if !ok {
		return 1024
	}
	return int(min(max(limit/2, 1), 65536))
}
