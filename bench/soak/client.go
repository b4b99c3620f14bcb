package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"
)

// requestTimeout bounds every request: one that takes longer counts as
// an error (a hang), never as a wait without end.
const requestTimeout = 3 * time.Minute

// job is one prompt the clients send: to /api/generate (system, then the
// prompt) or to /api/chat (a system message and a user message).
type job struct {
	chat       bool
	system     string // one of a few shared preambles, or ""
	prompt     string
	numPredict int
	noTruncate bool // truncate:false: a prompt over num_ctx is refused
}

// answer is what one request streamed back.
type answer struct {
	text       string
	evalCount  int
	promptEval int // prompt_eval_count
	reason     string
	chunks     int
}

var words = strings.Fields(`the a block cache prefix tree token model stream server client batch decode
prefill queue kernel memory disk store hash page table river mountain lantern quiet garden copper
seven orange winter paper window silver engine harbor meadow signal thunder pocket marble violet`)

// sentence is about n bytes of words.
func sentence(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()[:n]
}

// makeJobs makes n prompts that fit in numCtx with their output: a third
// go to /api/chat, three quarters start with one of four preambles (so
// they share cached prefixes), lengths vary from a few bytes to about
// two thirds of the context (the synthetic vocabulary is byte-level: a
// byte is at most one token).
func makeJobs(n, numCtx int, seed uint64) []job {
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	preambles := make([]string, 4)
	for i := range preambles {
		preambles[i] = sentence(rng, 24+rng.IntN(numCtx/4))
	}
	jobs := make([]job, n)
	for i := range jobs {
		j := job{chat: i%3 == 1, numPredict: 4 + rng.IntN(36)}
		if i%4 != 3 {
			j.system = preambles[i%len(preambles)]
		}
		budget := numCtx*2/3 - len(j.system) - 2
		j.prompt = sentence(rng, 1+rng.IntN(budget))
		jobs[i] = j
	}
	return jobs
}

// makeLongJobs makes n prompts longer than numCtx, by one to four
// contexts, half of them to /api/chat, each after a system preamble or
// none: the server truncates them, and their solo runs are references as
// makeJobs's are.
func makeLongJobs(n, numCtx int, seed uint64) []job {
	rng := rand.New(rand.NewPCG(seed, 0x10a9))
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = job{chat: i%2 == 1, numPredict: 8, prompt: sentence(rng, numCtx+1+rng.IntN(3*numCtx))}
		if i%4 < 2 {
			jobs[i].system = sentence(rng, 16+rng.IntN(numCtx/8))
		}
	}
	return jobs
}

// body is a job's endpoint and request, greedy and seeded; unload asks
// for the model to be unloaded when the request ends (keep_alive 0), as
// it is when no other request holds it then.
func (j job) body(stream, unload bool) (path, body string) {
	opts := map[string]any{"temperature": 0, "seed": 42, "num_predict": j.numPredict}
	var req map[string]any
	if j.chat {
		path = "/api/chat"
		var msgs []map[string]string
		if j.system != "" {
			msgs = append(msgs, map[string]string{"role": "system", "content": j.system})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": j.prompt})
		req = map[string]any{"model": modelName, "messages": msgs, "stream": stream, "options": opts}
	} else {
		path = "/api/generate"
		req = map[string]any{"model": modelName, "prompt": j.prompt, "system": j.system, "stream": stream, "options": opts}
	}
	if unload {
		req["keep_alive"] = 0
	}
	if j.noTruncate {
		req["truncate"] = false
	}
	data, _ := json.Marshal(req)
	return path, string(data)
}

// one sends a request of a random kind.
func (r *rig) one(rng *rand.Rand) {
	r.rep.Requests.Add(1)
	i := rng.IntN(len(r.jobs))
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	switch p := rng.IntN(100); {
	case p < 50: // a tenth of them ask for an unload at their end
		a, err := r.complete(ctx, r.jobs[i], p < 42, rng.IntN(10) == 0, nil)
		r.check(i, a, err)
	case p < 60:
		r.parallel(ctx, rng)
	case p < 72:
		r.cancel(ctx, i, rng)
	case p < 84:
		r.disconnect(i, rng)
	case p < 90:
		r.oversized(ctx, rng)
	case p < 95:
		r.badInput(ctx, rng)
	default:
		r.unloadRequest(ctx, rng)
	}
}

// check compares a completed request with the job's solo run.
func (r *rig) check(i int, a answer, err error) {
	if err != nil {
		r.rep.fail(&r.rep.Errors, "prompt %d: %v", i, err)
		return
	}
	ref := r.refs[i]
	if a.text != ref.text || a.evalCount != ref.evalCount || a.reason != ref.reason {
		r.rep.fail(&r.rep.Mismatches, "prompt %d: %d tokens %q (%s); alone: %d tokens %q (%s)",
			i, a.evalCount, a.text, a.reason, ref.evalCount, ref.text, ref.reason)
		return
	}
	r.rep.Served.Add(1)
	r.rep.Tokens.Add(int64(a.evalCount))
}

// streamLine is one NDJSON line of /api/generate or /api/chat.
type streamLine struct {
	Response string `json:"response"`
	Message  struct {
		Content string `json:"content"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	EvalCount       int    `json:"eval_count"`
	PromptEvalCount int    `json:"prompt_eval_count"`
	Error           string `json:"error"`
}

// complete sends j (unload: with keep_alive 0) and reads the answer to
// the end; onChunk, if set, is called after each line that does not end
// it.
func (r *rig) complete(ctx context.Context, j job, stream, unload bool, onChunk func(chunks int)) (answer, error) {
	path, body := j.body(stream, unload)
	resp, err := r.do(ctx, path, body)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return answer{}, fmt.Errorf("%s: status %d: %s", path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	dec := json.NewDecoder(resp.Body)
	var a answer
	for {
		var l streamLine
		if err := dec.Decode(&l); err != nil {
			return a, fmt.Errorf("%s: after %d lines: %w", path, a.chunks, err)
		}
		if l.Error != "" {
			return a, fmt.Errorf("%s: error after %d lines: %s", path, a.chunks, l.Error)
		}
		a.text += l.Response + l.Message.Content
		a.chunks++
		if l.Done {
			a.evalCount, a.promptEval, a.reason = l.EvalCount, l.PromptEvalCount, l.DoneReason
			return a, nil
		}
		if onChunk != nil {
			onChunk(a.chunks)
		}
	}
}

func (r *rig) do(ctx context.Context, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return r.client.Do(req)
}

// post sends body and wants status back.
func (r *rig) post(ctx context.Context, path, body string, status int) error {
	resp, err := r.do(ctx, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != status {
		return fmt.Errorf("%s %s: status %d, want %d: %s", path, body, resp.StatusCode, status, strings.TrimSpace(string(b)))
	}
	return nil
}

// cancel ends a streaming request by cancelling its context: after a
// random 0–20 ms (in the queue, in prefill or decoding) or after k lines.
// A request that finishes first is checked like any other.
func (r *rig) cancel(ctx context.Context, i int, rng *rand.Rand) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := 1 + rng.IntN(8)
	if rng.IntN(2) == 0 {
		t := time.AfterFunc(time.Duration(rng.IntN(20_000))*time.Microsecond, cancel)
		defer t.Stop()
		k = -1
	}
	a, err := r.complete(ctx, r.jobs[i], true, false, func(n int) {
		if n == k {
			cancel()
		}
	})
	switch {
	case err == nil:
		r.check(i, a, nil)
	case ctx.Err() != nil:
		r.rep.Cancels.Add(1)
	default:
		r.rep.fail(&r.rep.Errors, "cancelled prompt %d: %v", i, err)
	}
}

// disconnect writes a streaming request on a raw connection, reads k
// lines (0: none) and closes the connection.
func (r *rig) disconnect(i int, rng *rand.Rand) {
	path, body := r.jobs[i].body(true, false)
	conn, err := net.DialTimeout("tcp", r.addr, 10*time.Second)
	if err != nil {
		r.rep.fail(&r.rep.Errors, "disconnect: dial: %v", err)
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(requestTimeout))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, r.addr, len(body), body)
	if err != nil {
		r.rep.fail(&r.rep.Errors, "disconnect: write: %v", err)
		return
	}
	br := bufio.NewReader(conn)
	for k, seen, first := rng.IntN(6), 0, true; seen < k; first = false {
		l, err := br.ReadString('\n')
		if err != nil {
			r.rep.fail(&r.rep.Errors, "disconnect: prompt %d: read after %d lines: %v", i, seen, err)
			return
		}
		if first && !strings.HasPrefix(l, "HTTP/1.1 200") {
			r.rep.fail(&r.rep.Errors, "disconnect: prompt %d: %s", i, strings.TrimSpace(l))
			return
		}
		if strings.Contains(l, `"done":true`) {
			break
		}
		if strings.Contains(l, `"done":false`) {
			seen++
		}
	}
	r.rep.Disconnects.Add(1)
}

// oversized sends a prompt longer than num_ctx. With truncate:false the
// answer must be 400 naming num_ctx, before anything streams; by default
// (one of the long jobs) the server truncates it, and the answer must be
// its solo run's, from a prompt that fits num_ctx.
func (r *rig) oversized(ctx context.Context, rng *rand.Rand) {
	if rng.IntN(2) == 0 {
		i := rng.IntN(len(r.long))
		a, err := r.complete(ctx, r.long[i], rng.IntN(2) == 0, false, nil)
		ref := r.longRefs[i]
		switch {
		case err != nil:
			r.rep.fail(&r.rep.Errors, "truncated prompt %d: %v", i, err)
		case a.promptEval > r.cfg.NumCtx:
			r.rep.fail(&r.rep.Errors, "truncated prompt %d: prompt_eval_count %d, over num_ctx %d", i, a.promptEval, r.cfg.NumCtx)
		case a.text != ref.text || a.evalCount != ref.evalCount || a.reason != ref.reason:
			r.rep.fail(&r.rep.Mismatches, "truncated prompt %d: %d tokens %q (%s); alone: %d tokens %q (%s)",
				i, a.evalCount, a.text, a.reason, ref.evalCount, ref.text, ref.reason)
		default:
			r.rep.Truncated.Add(1)
		}
		return
	}
	j := job{chat: rng.IntN(2) == 0, numPredict: 8, noTruncate: true,
		prompt: sentence(rng, r.cfg.NumCtx+1+rng.IntN(3*r.cfg.NumCtx))}
	path, body := j.body(rng.IntN(2) == 0, false)
	resp, err := r.do(ctx, path, body)
	if err != nil {
		r.rep.fail(&r.rep.Errors, "oversized: %v", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "num_ctx") {
		r.rep.fail(&r.rep.Errors, "oversized prompt of %d bytes with truncate:false: status %d: %s", len(j.prompt), resp.StatusCode, b)
		return
	}
	r.rep.Oversized.Add(1)
}

// badInputs are malformed or impossible requests (MODEL: the soak's
// model) and the status each must get.
var badInputs = []struct {
	path, body string
	status     int
}{
	{"/api/generate", `{"model":"MODEL","prompt":"hi","options":{"temperature":"hot"}}`, 400},
	{"/api/generate", `{"model":"MODEL","prompt":`, 400},
	{"/api/generate", `[1,2,3]`, 400},
	{"/api/generate", `{"model":"MODEL","prompt":"hi","options":{"num_ctx":1000000}}`, 400},
	{"/api/generate", `{"model":"no-such-model","prompt":"hi"}`, 404},
	{"/api/chat", `{"model":"MODEL","messages":[{"role":"wizard","content":"hi"}]}`, 400},
	{"/api/chat", `{"model":"MODEL","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":-7}}`, 400},
	{"/api/chat", ``, 400},
}

func (r *rig) badInput(ctx context.Context, rng *rand.Rand) {
	b := badInputs[rng.IntN(len(badInputs))]
	if err := r.post(ctx, b.path, strings.ReplaceAll(b.body, "MODEL", modelName), b.status); err != nil {
		r.rep.fail(&r.rep.Errors, "bad input: %v", err)
		return
	}
	r.rep.BadInputs.Add(1)
}

// unloadRequest asks for the model to be unloaded (keep_alive 0 without
// a prompt): it unloads when no request holds it.
func (r *rig) unloadRequest(ctx context.Context, rng *rand.Rand) {
	path, body := "/api/generate", fmt.Sprintf(`{"model":%q,"keep_alive":0}`, modelName)
	if rng.IntN(2) == 0 {
		path, body = "/api/chat", fmt.Sprintf(`{"model":%q,"messages":[],"keep_alive":0}`, modelName)
	}
	if err := r.post(ctx, path, body, http.StatusOK); err != nil {
		r.rep.fail(&r.rep.Errors, "unload: %v", err)
		return
	}
	r.rep.UnloadRequests.Add(1)
}
