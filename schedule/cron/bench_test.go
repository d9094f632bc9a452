package cron

import "testing"

// BenchmarkExprNext measures the DST-aware next-instant computation.
func BenchmarkExprNext(b *testing.B) {
	for _, expr := range []string{"*/15 * * * *", "30 2 * * *", "0 0 29 2 *"} {
		b.Run(expr, func(b *testing.B) {
			s := mustExpr(b, expr, "America/New_York")
			at := t0
			for b.Loop() {
				at = s.Next(at)
				if at.Year() > 2400 {
					at = t0
				}
			}
		})
	}
}
