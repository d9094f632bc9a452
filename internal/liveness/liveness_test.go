package liveness

import "testing"

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestAskNeverBlocksAndAnswerCloses: probes of a loop that does not answer
// stay open and Ask never blocks; Answer closes every waiting probe.
func TestAskNeverBlocksAndAnswerCloses(t *testing.T) {
	p := New()
	var asked []<-chan struct{}
	for range 2 * maxWaiting {
		asked = append(asked, p.Ask()) // would block past maxWaiting if Ask sent unconditionally
	}
	for i, ch := range asked {
		if closed(ch) {
			t.Fatalf("probe %d answered before the loop answered", i)
		}
	}
	p.Answer()
	for i, ch := range asked[:maxWaiting] {
		if !closed(ch) {
			t.Errorf("probe %d not answered by Answer", i)
		}
	}
	for i, ch := range asked[maxWaiting:] {
		if closed(ch) {
			t.Errorf("probe %d, asked while %d were waiting, was answered", maxWaiting+i, maxWaiting)
		}
	}
	ch := p.Ask()
	close(<-p.Waiting()) // as a loop's select does
	if !closed(ch) {
		t.Errorf("a probe received from Waiting and closed is not answered")
	}
}
