package store

import "fmt"

// The results of an insert of jobs, alike on every engine.

// AssignInserted returns an insert's results from the ids it inserted, by
// key: a key's first job is Inserted, a repeat gets its id only, others their
// key alone, for ResolveKeys. count gets each inserted job's type.
func AssignInserted(jobs []NewJob, ids map[string]int64, count func(typ string)) []Enqueued {
	res := make([]Enqueued, len(jobs))
	fresh := make(map[string]bool, len(ids)) // inserted, not yet reported
	for k := range ids {
		fresh[k] = true
	}
	for i, j := range jobs {
		res[i].Key = j.Key
		id, ok := ids[j.Key]
		if !ok {
			continue
		}
		res[i].ID, res[i].Inserted = id, fresh[j.Key]
		if fresh[j.Key] {
			count(j.Type)
			delete(fresh, j.Key)
		}
	}
	return res
}

// ResolveKeys fills in the ids of jobs not inserted from lookup; a key no job
// holds belongs to a job purged since (Purged).
func ResolveKeys(res []Enqueued, lookup func(keys []string) (map[string]int64, error)) error {
	var missing []string
	for _, r := range res {
		if r.ID == 0 && !r.Skipped {
			missing = append(missing, r.Key)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	existing, err := lookup(missing)
	if err != nil {
		return fmt.Errorf("look up existing jobs: %w", err)
	}
	for i, r := range res {
		if r.ID == 0 && !r.Skipped {
			res[i].ID, res[i].Purged = existing[r.Key], existing[r.Key] == 0
		}
	}
	return nil
}

// ScanKeyedIDs reads rows of id and key into a map by key.
func ScanKeyedIDs(r Reading) (map[string]int64, error) {
	out := map[string]int64{}
	err := r.Each(func(row Row) (bool, error) {
		var id int64
		var key string
		err := row.Scan(&id, &key)
		out[key] = id
		return true, err
	})
	return out, err
}
