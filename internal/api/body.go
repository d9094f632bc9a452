package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Limits of a request's body.
const (
	// MaxBody bounds a request's body: room for a payload of
	// queue.MaxPayloadSize and the fields around it.
	MaxBody = queue.MaxPayloadSize + 64<<10
	// MaxDepth bounds the nesting of a body's JSON: a payload of
	// queue.MaxPayloadDepth inside the body's object.
	MaxDepth = queue.MaxPayloadDepth + 1
)

// decodeBody decodes the request's JSON object into v, refusing a body
// past MaxBody or MaxDepth, another media type, an unknown field and
// anything after the object. An empty body is an empty object.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return problemf(http.StatusRequestEntityTooLarge, codeBodyTooLarge, "the body is larger than %d bytes", MaxBody)
		}
		return problemf(http.StatusBadRequest, codeInvalidJSON, "read the body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return problemf(http.StatusUnsupportedMediaType, codeMediaType, "Content-Type %q: send application/json", ct)
		}
	} else {
		return problemf(http.StatusUnsupportedMediaType, codeMediaType, "no Content-Type: send application/json")
	}
	// Checked before decoding, whose cost grows with depth.
	if d := store.PayloadDepth(b); d > MaxDepth {
		return problemf(http.StatusBadRequest, codeJSONTooDeep, "the body's JSON nests %d deep: at most %d", d, MaxDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return problemf(http.StatusBadRequest, codeInvalidJSON, "the body is not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return problemf(http.StatusBadRequest, codeInvalidJSON, "the body holds more than one JSON value")
	}
	known := jsonFields(v)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !known[k] {
			return problemf(http.StatusBadRequest, codeUnknownField, "unknown field %q in the body: want %s", k,
				strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return problemf(http.StatusBadRequest, codeInvalidJSON, "field %q: want %s, not %s", te.Field, te.Type, te.Value)
		}
		return problemf(http.StatusBadRequest, codeInvalidJSON, "the body is not the JSON object wanted: %v", err)
	}
	return nil
}

// jsonFields are the JSON names of the fields of the struct *v.
func jsonFields(v any) map[string]bool {
	t := reflect.TypeOf(v).Elem()
	out := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}
