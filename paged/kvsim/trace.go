package kvsim

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Request is one row of a trace: when it arrives and how long its prompt
// and its answer are, in tokens.
type Request struct {
	Arrival        float64 // seconds from the start of the trace
	Prompt, Output int
}

// Trace is a list of requests in arrival order, and the context length a
// static allocator reserves for each sequence.
type Trace struct {
	Name     string
	MaxLen   int
	Requests []Request
}

// Chat is a ShareGPT-like conversation trace of n requests: prompt and
// answer lengths are lognormal, prompt ~ exp(N(4.5, 1.0²)) (median 90,
// mean 148 tokens) and answer ~ exp(N(5.5, 0.8²)) (median 245, mean 337),
// close to the ShareGPT means the vLLM paper reports (161 and 338). Prompts
// are clipped to 4–1,536 tokens and answers to at least 1 token and to
// the 2,048-token context, which is also what static allocation reserves.
// Arrivals are Poisson at 100 requests a second, faster than any policy
// serves them, so memory, not arrivals, bounds concurrency.
func Chat(seed uint64, n int) Trace {
	const maxLen = 2048
	rng := rand.New(rand.NewPCG(seed, 0x63686174))
	t := Trace{Name: "chat", MaxLen: maxLen}
	now := 0.0
	for range n {
		now += rng.ExpFloat64() / 100
		p := clamp(int(math.Round(math.Exp(4.5+1.0*rng.NormFloat64()))), 4, 1536)
		o := clamp(int(math.Round(math.Exp(5.5+0.8*rng.NormFloat64()))), 1, maxLen-p)
		t.Requests = append(t.Requests, Request{Arrival: now, Prompt: p, Output: o})
	}
	return t
}

// Extraction is a document-extraction trace of n requests, as research
// extraction loops send: prompts uniform in 4,096–16,384 tokens (a long
// document), answers uniform in 50–300 tokens, Poisson arrivals at 10 a
// second. Static allocation reserves 16,896 tokens (16Ki + 512).
func Extraction(seed uint64, n int) Trace {
	rng := rand.New(rand.NewPCG(seed, 0x65787472))
	t := Trace{Name: "extraction", MaxLen: 16384 + 512}
	now := 0.0
	for range n {
		now += rng.ExpFloat64() / 10
		t.Requests = append(t.Requests, Request{
			Arrival: now,
			Prompt:  4096 + rng.IntN(16384-4096+1),
			Output:  50 + rng.IntN(300-50+1),
		})
	}
	return t
}

// ReadTrace reads rows of "arrival prompt_len output_len" (seconds,
// tokens, tokens), separated by spaces, tabs or commas. Blank lines,
// lines starting with # and a header before the first row are skipped. Rows may come in
// any order; the trace is sorted by arrival. MaxLen is the longest
// request rounded up to a power of two.
func ReadTrace(r io.Reader, name string) (Trace, error) {
	t := Trace{Name: name}
	sc := bufio.NewScanner(r)
	longest, header := 0, true // a header may come before the first row
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(f) != 3 {
			return t, fmt.Errorf("kvsim: %s:%d: %d fields, want arrival, prompt_len, output_len", name, line, len(f))
		}
		arrival, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.Atoi(f[1])
		o, err3 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || err3 != nil {
			if header {
				header = false
				continue
			}
			return t, fmt.Errorf("kvsim: %s:%d: %q is not arrival seconds and two token counts", name, line, text)
		}
		if arrival < 0 || p < 1 || o < 1 {
			return t, fmt.Errorf("kvsim: %s:%d: want arrival ≥ 0, prompt_len ≥ 1, output_len ≥ 1", name, line)
		}
		header = false
		t.Requests = append(t.Requests, Request{Arrival: arrival, Prompt: p, Output: o})
		longest = max(longest, p+o)
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("kvsim: %s: %w", name, err)
	}
	if len(t.Requests) == 0 {
		return t, fmt.Errorf("kvsim: %s: no requests", name)
	}
	slices.SortStableFunc(t.Requests, func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
	t.MaxLen = 16
	for t.MaxLen < longest {
		t.MaxLen *= 2
	}
	return t, nil
}

func clamp(x, lo, hi int) int { return max(lo, min(x, hi)) }

// BuiltIn is the built-in trace of that name, "chat" (2,000 requests) or
// "extraction" (200), generated from seed.
func BuiltIn(name string, seed uint64) (Trace, bool) {
	switch name {
	case "chat":
		return Chat(seed, 2000), true
	case "extraction":
		return Extraction(seed, 200), true
	}
	return Trace{}, false
}
