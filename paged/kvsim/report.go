package kvsim

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// WriteTable prints rows as an aligned table, then what they say about
// paged B=16 next to static allocation for each trace.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trace\tpolicy\tB\tn\twaste %\tmax seqs\tblocks used\tunshared\tsaved %\tpreempted\trejected\t")
	for _, r := range rows {
		b := "-"
		if r.BlockSize > 0 {
			b = fmt.Sprint(r.BlockSize)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2f\t%d\t%d\t%d\t%.1f\t%d\t%d\t\n", r.Trace, r.Policy, b, r.ParallelN,
			r.WastePct, r.MaxConcurrent, r.BlocksUsed, r.BlocksUnshared, r.SavedPct(), r.Preemptions, r.Rejected)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "static and doubling have no blocks: their blocks are %d-token units.\n", UnitTokens)
	for _, line := range Summary(rows) {
		fmt.Fprintln(w, line)
	}
	return nil
}

// Summary says, per trace, how paged B=16 compares with static allocation
// (n=1) and what n=4 sampling saves against four copies.
func Summary(rows []Row) []string {
	find := func(trace, policy string, bs, n int) (Row, bool) {
		for _, r := range rows {
			if r.Trace == trace && r.Policy == policy && r.BlockSize == bs && r.ParallelN == n {
				return r, true
			}
		}
		return Row{}, false
	}
	var lines, seen []string
	for _, r := range rows {
		if slices.Contains(seen, r.Trace) {
			continue
		}
		seen = append(seen, r.Trace)
		p, okP := find(r.Trace, "paged", 16, 1)
		s, okS := find(r.Trace, "static", 0, 1)
		if okP && okS && s.MaxConcurrent > 0 {
			lines = append(lines, fmt.Sprintf("%s: paged B=16 wastes %.2f%% of its KV memory (static %.2f%%) and holds %d sequences at once, %.1fx static's %d.",
				r.Trace, p.WastePct, s.WastePct, p.MaxConcurrent, float64(p.MaxConcurrent)/float64(s.MaxConcurrent), s.MaxConcurrent))
		}
		if p4, ok := find(r.Trace, "paged", 16, 4); ok {
			lines = append(lines, fmt.Sprintf("%s: n=4 sampling with paged B=16 takes %.1f%% fewer blocks than 4 independent copies (%d vs %d).",
				r.Trace, p4.SavedPct(), p4.BlocksUsed, p4.BlocksUnshared))
		}
	}
	return lines
}
