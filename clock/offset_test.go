package clock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestOffsetFileShiftsTheWallClock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "offset")
	o := &OffsetFile{Path: path}
	if d := o.Now().Sub(time.Now()); d < -time.Second || d > time.Second {
		t.Errorf("no file: offset %v, want about 0", d)
	}
	os.WriteFile(path, []byte("2h\n"), 0o600)
	o = &OffsetFile{Path: path}
	if d := o.Now().Sub(time.Now()); d < 2*time.Hour-time.Second || d > 2*time.Hour+time.Second {
		t.Errorf("offset %v, want about 2h", d)
	}
	os.WriteFile(path, []byte("garbage"), 0o600)
	o.readAt = time.Time{} // force a re-read
	if d := o.Now().Sub(time.Now()); d < 2*time.Hour-time.Second {
		t.Errorf("a malformed file changed the offset to %v", d)
	}
}

// TestOffsetFileStepsTheWallClockAlone: a change of the offset moves Now
// and not Monotonic, as a real step does; Steps sees it.
func TestOffsetFileStepsTheWallClockAlone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "offset")
	o := &OffsetFile{Path: path}
	var s Steps
	s.Read(o)
	m0 := o.Monotonic()
	os.WriteFile(path, []byte("-1h"), 0o600)
	o.readAt = time.Time{} // force a re-read
	_, step := s.Read(o)
	if step > -time.Hour+time.Second || step < -time.Hour-time.Second {
		t.Errorf("Steps saw a step of %v, want about -1h", step)
	}
	if d := o.Monotonic() - m0; d < 0 || d > time.Minute {
		t.Errorf("Monotonic moved %v across the step, want the little real time that passed", d)
	}
}
