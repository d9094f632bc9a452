package cli

import (
	"context"
	"fmt"
)

// cancelJob cancels the job -cancel names, by id or key.
func (a *app) cancelJob(ctx context.Context) error {
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	j, err := a.findJob(ctx, q, a.o.cancel)
	if err != nil {
		return err
	}
	if err := q.Cancel(ctx, j.ID); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "job %d (%s) cancelled\n", j.ID, j.Key)
	return nil
}
