package store

import "fmt"

// The results of an insert of jobs, the same on every engine: what a job
// whose key was taken gets.

// AssignInserted returns the results of an insert of jobs that inserted
// the jobs of ids, by key: the first job with an inserted key is Inserted,
// a repeat of it later in jobs gets its id and is not. The other jobs get
// their keys alone, for ResolveKeys. count is called with the type of each
// job inserted.
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

// ResolveKeys completes the results of the jobs an insert did not insert
// and whose id it does not know: lookup returns the ids of the jobs that
// hold their keys, and a key no job holds belongs to a job purged since
// (Purged).
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
