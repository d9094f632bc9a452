package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"

	"github.com/scheduler-run/scheduler/internal/tmplkey"
)

// explainKey returns err, the failure of argument template t over payload,
// in the payload's words when t reads a key the payload lacks or holds as
// null (a null value is dropped before execution, so that it is an error
// rather than "<no value>" in an argument, but it is not a missing key).
// Other failures come back as they are.
func explainKey(t *template.Template, payload json.RawMessage, err error) error {
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if dec.Decode(&data) != nil || data == nil {
		return err
	}
	kp := tmplkey.Find(t, data)
	switch {
	case kp == nil:
		return err
	case kp.Null:
		return fmt.Errorf("key %q of the payload is null", kp.Key())
	}
	return fmt.Errorf("the payload has no key %q; %s", kp.Key(), kp.Holder())
}
