package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"scheduler/internal/tmplkey"
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
		return fmt.Errorf("key %q of the payload is null", strings.Join(kp.Path, "."))
	}
	has := "it has "
	if len(kp.Path) > 1 {
		has = fmt.Sprintf("%q has ", strings.Join(kp.Path[:len(kp.Path)-1], "."))
	}
	if len(kp.Have) == 0 {
		has += "no keys"
	} else {
		has += strings.Join(kp.Have, ", ")
	}
	return fmt.Errorf("the payload has no key %q; %s", strings.Join(kp.Path, "."), has)
}
