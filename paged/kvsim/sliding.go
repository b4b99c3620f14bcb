package kvsim

import (
	"fmt"
	"io"
	"text/tabwriter"

	"folio/paged"
)

// LayerShape is a model's attention layers as the paged-swa policy sees
// them: Full layers attend to every position, Sliding ones to the last
// Window only.
type LayerShape struct {
	Name          string
	Full, Sliding int
	Window        int
}

// SlidingShapes are the models the paged-swa policy replays: Gemma 3 1B
// (26 layers, every sixth full, window 512) and 4B (34 layers, window
// 1024).
var SlidingShapes = []LayerShape{
	{Name: "gemma3-1b", Full: 4, Sliding: 22, Window: 512},
	{Name: "gemma3-4b", Full: 5, Sliding: 29, Window: 1024},
}

// SlidingRow is one long context replayed under the paged-swa policy: a
// full-attention group and a sliding group, each its own pool and table
// (paged.Group), against every layer in one full-attention pool. Memory
// is counted in layer-blocks (a block of one layer's K and V), so the
// ratios hold for any head size and cache type.
type SlidingRow struct {
	Model     string  `json:"model"`
	Context   int     `json:"context"`    // tokens at the end
	BlockSize int     `json:"block_size"` // tokens per block
	Chunk     int     `json:"chunk"`      // prefill tokens per step
	FullOnly  int64   `json:"full_only"`  // layer-blocks a full-attention cache holds at the end
	End       int64   `json:"end"`        // layer-blocks paged-swa holds at the end
	Peak      int64   `json:"peak"`       // the most it held after any step
	EndPct    float64 `json:"end_pct"`    // End / FullOnly, percent
	PeakPct   float64 `json:"peak_pct"`   // Peak / FullOnly, percent
	// Resumed is the prefix a second request continuing the first one's
	// conversation attaches from the cache, in tokens: the whole context
	// when the cache held the window before its end.
	Resumed int `json:"resumed"`
}

// RunSliding replays one request of ctx tokens through the real
// paged.Manager with sh's layer groups: the prompt (all but the last 64
// tokens) in chunks of chunk, then one token per step. It then caches the
// sequence as the runner does when a request ends (CacheResumable) and
// attaches a continuation of it, as the next turn of a chat would.
func RunSliding(sh LayerShape, ctx, bs, chunk int) (SlidingRow, error) {
	row := SlidingRow{Model: sh.Name, Context: ctx, BlockSize: bs, Chunk: chunk}
	full := ceilDiv(ctx+bs, bs)
	swa := min(full, (sh.Window+chunk)/bs+2)
	m, err := paged.New(paged.Config{BlockSize: bs, Groups: []paged.Group{
		{Blocks: full}, {Blocks: swa, Window: sh.Window}}})
	if err != nil {
		return row, fmt.Errorf("kvsim: %w", err)
	}
	held := func(s paged.SeqID) int64 {
		return int64(sh.Full*m.HeldBlocks(s, 0) + sh.Sliding*m.HeldBlocks(s, 1))
	}
	s := m.NewSeq("")
	for m.Len(s) < ctx {
		n := min(chunk, ctx-64-m.Len(s))
		if n <= 0 {
			n = 1
		}
		if err := m.Append(s, n); err != nil {
			return row, fmt.Errorf("kvsim: %s at %d tokens: %w", sh.Name, m.Len(s), err)
		}
		row.Peak = max(row.Peak, held(s))
	}
	row.End = held(s)
	row.FullOnly = int64((sh.Full + sh.Sliding) * m.HeldBlocks(s, 0))
	row.EndPct = 100 * float64(row.End) / float64(row.FullOnly)
	row.PeakPct = 100 * float64(row.Peak) / float64(row.FullOnly)

	tokens := make([]int32, ctx+1)
	for i := range tokens {
		tokens[i] = int32(i % 1000)
	}
	m.CacheResumable(s, tokens[:ctx])
	m.Free(s)
	next := m.NewSeq("")
	row.Resumed = m.AttachPrefix(next, tokens)
	m.Free(next)
	return row, nil
}

// RunSlidingAll replays every shape of SlidingShapes at ctx tokens in
// blocks of 16 and prefill chunks of 512.
func RunSlidingAll(ctx int) ([]SlidingRow, error) {
	var rows []SlidingRow
	for _, sh := range SlidingShapes {
		r, err := RunSliding(sh, ctx, paged.DefaultBlockSize, 512)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// WriteSlidingTable prints rows as an aligned table.
func WriteSlidingTable(w io.Writer, rows []SlidingRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tcontext\tB\tfull-attention layer-blocks\tpaged-swa at end\tend %\tpaged-swa peak\tpeak %\tresumed\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%d\t%.1f\t%d\t\n",
			r.Model, r.Context, r.BlockSize, r.FullOnly, r.End, r.EndPct, r.Peak, r.PeakPct, r.Resumed)
	}
	return tw.Flush()
}
