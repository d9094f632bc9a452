package dashboard

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The charts are SVG drawn on the server by the "barchart" template from
// a barChart, whose geometry is computed here: no script, no front-end
// build. Every chart has a title and a description for screen readers,
// labelled axes, a legend, and a tooltip per bar; its colours (classes
// s-*, in charts.css) are the Okabe-Ito palette, which colour-blind readers
// tell apart, and its text and grid take the page's text colour.

// Chart geometry, in the SVG's user units.
const (
	chartW      = 760
	chartH      = 220
	chartLeft   = 64 // room for the y axis's ticks and label
	chartRight  = 12
	chartTop    = 12
	chartBottom = 40 // room for the x axis's ticks and label
)

// series is one stacked part of a chart's bars: its colour class and
// legend label.
type series struct{ Class, Label string }

// point is one bar: its label (for the tooltip and the x axis) and a value
// per series, stacked from the bottom; Classes, when set, replaces the
// series' colour classes for this bar.
type point struct {
	Label   string
	Tick    string // the x axis's label under this bar; "" for none
	Values  []float64
	Classes []string
}

// barChart is a chart as the "barchart" template draws it.
type barChart struct {
	ID, Title, Desc string
	XLabel, YLabel  string
	Series          []series
	Bars            []bar
	YTicks          []tick
	XTicks          []tick
	Rules           []rule
	W, H            int
	Left, Top       float64
	PlotW, PlotH    float64
	Base            float64 // the y of the x axis
}

// bar is one drawn bar: its segments, bottom first.
type bar struct {
	X, W  float64
	Title string // the tooltip: label and values
	Total string // the bar's summed value, as data-total
	Segs  []seg
}

type seg struct {
	Y, H  float64
	Class string
}

// tick is an axis's label at a position (x or y).
type tick struct {
	At    float64
	Label string
}

// rule is a horizontal line across the plot at Y, such as a deadline.
type rule struct {
	Y     float64
	Class string
	Label string
}

// axis formats a chart's values: counts or durations (in seconds).
type axis struct {
	format func(v float64) string
	steps  []float64 // nice tick steps, ascending
}

var countAxis = axis{format: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }, steps: niceCounts()}

var durationAxis = axis{format: func(v float64) string { return shortDuration(time.Duration(v * float64(time.Second))) },
	steps: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800,
		3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400}}

// niceCounts are 1, 2 and 5 times the powers of ten up to a billion.
func niceCounts() []float64 {
	var out []float64
	for p := 1.0; p <= 1e9; p *= 10 {
		out = append(out, p, 2*p, 5*p)
	}
	return out
}

// newBarChart lays points out over the plot, scaled to the greatest stack
// (or rule) on ax; rules are drawn at their value.
func newBarChart(id, title, desc string, ss []series, points []point, ax axis, rules map[string]float64) barChart {
	c := barChart{ID: id, Title: title, Desc: desc, Series: ss, W: chartW, H: chartH, Left: chartLeft, Top: chartTop,
		PlotW: chartW - chartLeft - chartRight, PlotH: chartH - chartTop - chartBottom}
	c.Base = c.Top + c.PlotH
	top := 0.0
	for _, p := range points {
		sum := 0.0
		for _, v := range p.Values {
			sum += v
		}
		top = max(top, sum)
	}
	for _, v := range rules {
		top = max(top, v)
	}
	step, ymax := niceScale(top, ax.steps)
	y := func(v float64) float64 { return round1(c.Base - v/ymax*c.PlotH) }
	for v := 0.0; v <= ymax+step/2; v += step {
		c.YTicks = append(c.YTicks, tick{At: y(v), Label: ax.format(v)})
	}
	for _, class := range []string{"start", "deadline"} {
		if v, ok := rules[class]; ok {
			c.Rules = append(c.Rules, rule{Y: y(v), Class: class, Label: class + " " + ax.format(v)})
		}
	}
	slot := c.PlotW / float64(max(len(points), 1))
	for i, p := range points {
		b := bar{X: round1(c.Left + float64(i)*slot + slot*0.1), W: round1(max(slot*0.8, 1)), Title: p.Label}
		sum := 0.0
		for j, v := range p.Values {
			class := ss[j].Class
			if j < len(p.Classes) && p.Classes[j] != "" {
				class = p.Classes[j]
			}
			if v > 0 {
				b.Segs = append(b.Segs, seg{Y: y(sum + v), H: round1(y(sum) - y(sum+v)), Class: class})
			}
			sum += v
			b.Title += fmt.Sprintf("; %s %s", ss[j].Label, ax.format(v))
		}
		b.Total = ax.format(sum)
		c.Bars = append(c.Bars, b)
		if p.Tick != "" {
			c.XTicks = append(c.XTicks, tick{At: round1(b.X + b.W/2), Label: p.Tick})
		}
	}
	return c
}

// niceScale returns the tick step and the axis's top for values up to top:
// at most five steps.
func niceScale(top float64, steps []float64) (step, ymax float64) {
	step = steps[len(steps)-1]
	for _, s := range steps {
		if top <= 5*s {
			step = s
			break
		}
	}
	ymax = math.Max(math.Ceil(top/step), 1) * step
	return step, ymax
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// shortDuration writes d in its largest unit or two: "250ms", "1m30s",
// "2h", "1d6h".
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	out := ""
	for i, u := range units {
		if d >= u.d {
			out += strconv.FormatInt(int64(d/u.d), 10) + u.name
			d %= u.d
			if rest := d / units[min(i+1, len(units)-1)].d; rest > 0 && i+1 < len(units) {
				out += strconv.FormatInt(int64(rest), 10) + units[i+1].name
			}
			return out
		}
	}
	return out
}
