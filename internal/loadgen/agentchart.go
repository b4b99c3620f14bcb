package loadgen

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteAgentChart draws r's time to first token by turn as a PNG, one line
// per pass and agent, on a logarithmic scale.
func WriteAgentChart(w io.Writer, r AgentReport) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Agent loop: %d agents interleaved, %d-token system prompt and %d tools", r.Agents, r.SystemTokens, r.Tools)
	p.X.Label.Text = "turn"
	p.Y.Label.Text = "time to first token (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, false
	p.Add(plotter.NewGrid())
	// room on the right for the legend
	p.X.Min, p.X.Max = 1, 1+1.45*float64(r.Turns-1)
	p.X.Tick.Marker = turnTicks(r.Turns)
	passes := []struct {
		name  string
		pass  AgentPass
		color color.RGBA
	}{
		{"no prefix cache", r.NoCache, color.RGBA{R: 200, G: 40, B: 40, A: 255}},
		{fmt.Sprintf("restart after turn %d", r.RestartTurn-1), r.Restart, color.RGBA{R: 30, G: 120, B: 200, A: 255}},
		{"prefix cache", r.Cache, color.RGBA{R: 30, G: 150, B: 60, A: 255}},
	}
	for _, ps := range passes {
		for a := 1; a <= r.Agents; a++ {
			var xys plotter.XYs
			for _, t := range ps.pass.Turns {
				if t.Agent == a && t.TTFTms > 0 {
					xys = append(xys, plotter.XY{X: float64(t.Turn), Y: t.TTFTms})
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			l.Color, s.Color = ps.color, ps.color
			s.Shape = draw.CircleGlyph{}
			if a > 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				s.Shape = draw.TriangleGlyph{}
			}
			p.Add(l, s)
			p.Legend.Add(fmt.Sprintf("%s, agent %d", ps.name, a), l, s)
		}
	}
	img := vgimg.New(10*vg.Inch, 6*vg.Inch)
	p.Draw(draw.New(img))
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("loadgen: writing the chart: %w", err)
	}
	return nil
}

// turnTicks marks the turns 1..n, labelling about ten of them.
func turnTicks(n int) plot.TickerFunc {
	step := max(1, (n+9)/10)
	return func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for t := 1; t <= n; t++ {
			label := ""
			if (t-1)%step == 0 {
				label = fmt.Sprint(t)
			}
			ts = append(ts, plot.Tick{Value: float64(t), Label: label})
		}
		return ts
	}
}
