package kvsim

import (
	"fmt"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteChart draws rows as a PNG: for each trace, memory waste and
// resident sequences per policy (n=1), and the KV tokens a request holds
// against the parallel-sampling width n.
func WriteChart(w io.Writer, rows []Row) error {
	var traces []string
	for _, r := range rows {
		if !slices.Contains(traces, r.Trace) {
			traces = append(traces, r.Trace)
		}
	}
	if len(traces) == 0 {
		return fmt.Errorf("kvsim: no rows to chart")
	}
	grid := make([][]*plot.Plot, len(traces))
	for i, tr := range traces {
		var single []Row // n=1, in policy order
		lines := map[string]plotter.XYs{}
		var names []string
		for _, r := range rows {
			if r.Trace != tr {
				continue
			}
			name := label(r)
			if r.ParallelN == 1 {
				single = append(single, r)
			}
			if _, ok := lines[name]; !ok {
				names = append(names, name)
			}
			perRequest := 0.0
			if r.Completed > 0 {
				perRequest = float64(r.BlocksUsed*int64(tokensPerBlock(r))) / float64(r.Completed)
			}
			lines[name] = append(lines[name], plotter.XY{X: float64(r.ParallelN), Y: perRequest})
		}
		waste, err := bars(tr+": memory waste, n=1", "% of allocated KV slots", single, func(r Row) float64 { return r.WastePct })
		if err != nil {
			return err
		}
		fit, err := bars(tr+": sequences resident at once, n=1", "sequences", single, func(r Row) float64 { return float64(r.MaxConcurrent) })
		if err != nil {
			return err
		}
		par := plot.New()
		par.Title.Text = tr + ": parallel sampling"
		par.X.Label.Text = "n (samples per prompt)"
		par.Y.Label.Text = "KV tokens held per request"
		par.Legend.Top, par.Legend.Left = true, true
		for j, name := range names {
			l, s, err := plotter.NewLinePoints(lines[name])
			if err != nil {
				return err
			}
			l.Color, s.Color, s.Shape = plotutil.Color(j), plotutil.Color(j), plotutil.Shape(j)
			par.Add(l, s)
			par.Legend.Add(name, l, s)
		}
		grid[i] = []*plot.Plot{waste, fit, par}
	}
	img := vgimg.New(15*vg.Inch, vg.Length(len(traces))*4.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(traces), Cols: 3, PadX: vg.Inch / 3, PadY: vg.Inch / 3,
		PadTop: vg.Inch / 6, PadBottom: vg.Inch / 6, PadLeft: vg.Inch / 6, PadRight: vg.Inch / 6}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j := range grid[i] {
			grid[i][j].Draw(canvases[i][j])
		}
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("kvsim: writing the chart: %w", err)
	}
	return nil
}

func bars(title, ylabel string, rows []Row, value func(Row) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	vs := make(plotter.Values, len(rows))
	names := make([]string, len(rows))
	for i, r := range rows {
		vs[i], names[i] = value(r), label(r)
	}
	b, err := plotter.NewBarChart(vs, vg.Points(28))
	if err != nil {
		return nil, err
	}
	b.Color = plotutil.Color(0)
	p.Add(b)
	p.NominalX(names...)
	return p, nil
}

// label names a row's policy: "static", "doubling", "paged B=16".
func label(r Row) string {
	if r.BlockSize > 0 {
		return fmt.Sprintf("%s B=%d", r.Policy, r.BlockSize)
	}
	return r.Policy
}

func tokensPerBlock(r Row) int {
	if r.BlockSize > 0 {
		return r.BlockSize
	}
	return UnitTokens
}
