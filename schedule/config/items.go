package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
)

// Item is one element of a schedule's fan-out: one job per instant.
type Item struct {
	// ID names the item in its schedule: its sorted keys as key=value
	// joined by ",", non-strings JSON-encoded ("customer=acme,tier=3").
	// "" without for_each.
	ID string
	// Payload is the schedule's payload with the item's keys merged over.
	Payload json.RawMessage

	keys []string // the for_each entry's keys, sorted
}

// Sets reports whether the item's for_each entry sets key.
func (it Item) Sets(key string) bool { return slices.Contains(it.keys, key) }

// Merge returns the item's payload with over merged over it.
func (it Item) Merge(over map[string]any) (json.RawMessage, error) {
	base, err := DecodeObject(it.Payload)
	if err != nil {
		return nil, err
	}
	return encodePayload(merge(base, over))
}

func itemID(item map[string]any) (string, error) {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(item)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		if s, ok := item[k].(string); ok {
			b.WriteString(s)
			continue
		}
		v, err := json.Marshal(item[k])
		if err != nil {
			return "", fmt.Errorf("key %q: %w", k, err)
		}
		b.Write(v)
	}
	return b.String(), nil
}

// merge returns base with over's keys merged over it, as a new map.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// buildItems returns a schedule's Items (see Schedule.Items). Each payload
// is checked as an enqueue would check it.
func buildItems(payload map[string]any, forEach []map[string]any) ([]Item, error) {
	if len(forEach) == 0 {
		p, err := encodePayload(payload)
		if err == nil {
			err = queue.CheckPayload(p)
		}
		if err != nil {
			return nil, err
		}
		return []Item{{Payload: p}}, nil
	}
	items := make([]Item, len(forEach))
	seen := make(map[string]int, len(forEach))
	for i, e := range forEach {
		if len(e) == 0 {
			return nil, fmt.Errorf("item %d is empty", i+1)
		}
		id, err := itemID(e)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		if j, ok := seen[id]; ok {
			return nil, fmt.Errorf("item %d repeats item %d (%s)", i+1, j+1, id)
		}
		seen[id] = i
		p, err := encodePayload(merge(payload, e))
		if err == nil {
			err = queue.CheckPayload(p)
		}
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		items[i] = Item{ID: id, Payload: p, keys: slices.Sorted(maps.Keys(e))}
	}
	return items, nil
}

// encodePayload encodes a payload map as a JSON object; nil is {}.
func encodePayload(m map[string]any) (json.RawMessage, error) {
	if len(m) == 0 {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// DecodeObject decodes a JSON object; empty input is an empty object.
// Numbers keep their text, as the command handler decodes them.
func DecodeObject(b json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode payload as a json object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode payload as a json object: data after the object")
	}
	if m == nil {
		return nil, errors.New("decode payload as a json object: got null")
	}
	return m, nil
}
