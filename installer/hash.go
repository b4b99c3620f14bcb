package installer

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
)

// hasher computes a download's sha256 while it runs, so that the check at
// the end reads only the bytes it had not reached. It reads the partial
// file in order up to the end of the written prefix (the ranges before the
// first incomplete one, and that one's done bytes), then waits for a poke.
// Written bytes of a ranged download never change, so what it hashed
// stays hashed; a single stream restarts from zero on failure and is
// hashed at the end instead.
type hasher struct {
	d    *download
	h    hash.Hash
	n    int64         // bytes hashed: the goroutine's until done is closed
	err  error         // written before done is closed
	stop chan struct{} // closed to end the goroutine once it has caught up
	done chan struct{} // closed when the goroutine has returned
}

func (d *download) startHasher() *hasher {
	hs := &hasher{d: d, h: sha256.New(), stop: make(chan struct{}), done: make(chan struct{})}
	go hs.loop()
	return hs
}

func (hs *hasher) loop() {
	defer close(hs.done)
	buf := make([]byte, 4<<20)
	for {
		for end := hs.d.prefix(); hs.n < end; {
			m, err := hs.d.file.ReadAt(buf[:min(int64(len(buf)), end-hs.n)], hs.n)
			hs.h.Write(buf[:m])
			hs.n += int64(m)
			if err != nil {
				hs.err = err
				return
			}
		}
		select {
		case <-hs.d.more:
		case <-hs.stop:
			return
		}
	}
}

// finish ends the goroutine and hashes the rest of the file: the digest
// and size of the whole.
func (hs *hasher) finish() (string, int64, error) {
	close(hs.stop)
	<-hs.done
	if hs.err != nil {
		return hashFile(hs.d.file)
	}
	n, err := io.CopyBuffer(hs.h, io.NewSectionReader(hs.d.file, hs.n, 1<<62), make([]byte, 4<<20))
	if err != nil {
		return "", hs.n + n, err
	}
	return "sha256:" + hex.EncodeToString(hs.h.Sum(nil)), hs.n + n, nil
}

// abandon ends the goroutine without a result.
func (hs *hasher) abandon() {
	close(hs.stop)
	<-hs.done
}

// prefix is how many bytes from the start of the file are written.
func (d *download) prefix() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, p := range d.st.Parts {
		n += p.Done
		if p.Len < 0 || p.Done < p.Len {
			break
		}
	}
	return n
}
