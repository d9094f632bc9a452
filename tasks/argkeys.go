package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"

	"github.com/scheduler-run/scheduler/internal/tmplkey"
)

// explainKey rewords err, template t's failure over payload, when t reads
// a key the payload lacks or holds as null (dropped before execution, but
// not missing). Other failures come back as they are.
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
