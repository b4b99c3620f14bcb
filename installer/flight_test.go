package installer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAbandonedFlightStopsBeforeWaitReturns: the last waiter to leave a
// download waits for it to stop, so that a pull that failed (its other
// layers cancelled) returns only when nothing writes in the home any more
// (TestPullBadDigest's temporary home was once removed while a cancelled
// layer still wrote its resume record).
func TestAbandonedFlightStopsBeforeWaitReturns(t *testing.T) {
	for _, waiters := range []int{1, 2} {
		fl := &flight{key: "test", done: make(chan struct{}), waiters: waiters}
		stopped := make(chan struct{})
		fl.cancel = func() {
			go func() { // a download notices its cancellation a moment later
				time.Sleep(50 * time.Millisecond)
				close(stopped)
				close(fl.done)
			}()
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for w := waiters; w > 0; w-- {
			if _, err := fl.wait(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("%d waiters: wait: %v, want context.Canceled", waiters, err)
			}
			select {
			case <-stopped:
				if w > 1 {
					t.Fatalf("%d waiters: the download stopped while %d still waited", waiters, w-1)
				}
			default:
				if w == 1 {
					t.Fatalf("%d waiters: the last waiter returned before the abandoned download stopped", waiters)
				}
			}
		}
	}
}
