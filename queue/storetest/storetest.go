// Package storetest is the behaviour every storage engine of the queue
// must show: one conformance suite, run by each engine's tests against a
// real database (see Run). It holds the tests of the rules of store.Engine
// (enqueue and dedup, advance and its cursor compare-and-set, skips, lists,
// runs and stats, retry and cancel, reclaim, purge and maintenance, a
// pool's PoolTx: claim order, fences, prefetch, heartbeat, presence; the
// watch and the subscription; the enqueue in the caller's transaction),
// many of them with two stores sharing one database, as two daemons or
// nodes do. An engine's tests add hooks to its store for some of them
// (JobCounter, Outboxer). What only one engine has (a file's mode,
// SQLite's write turn and the internals of its watch; PostgreSQL's
// migrations under concurrent starts, its clock, LISTEN's reconnection,
// the maintenance lock) is tested beside that engine.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// OpenFunc opens a fresh, empty store for one test, whose time is c, and
// returns with it a func that opens another store on the same database,
// whose time is the clock it is given: a second daemon or node sharing the
// first one's rows (on SQLite, another Open of the same file; on
// PostgreSQL, of the same schema). Both fail t when they cannot, and close
// their stores when t ends.
type OpenFunc func(t *testing.T, c clock.Clock) (s store.Engine, same func(c clock.Clock) store.Engine)

// Run runs the suite against the stores that open returns. Its tests run
// in parallel, each on a store of its own.
func Run(t *testing.T, open OpenFunc) {
	s := &suite{openFunc: open}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, s) })
	}
}

var tests = []struct {
	name string
	fn   func(t *testing.T, s *suite)
}{
	{"EnqueueIsIdempotentOnKey", testEnqueueIsIdempotentOnKey},
	{"TraceRoundTrips", testTraceRoundTrips},
	{"FinishesAndReadySince", testFinishesAndReadySince},
	{"CountsAreExact", testCountsAreExact},
	{"EnqueueBatchIsAllOrNothing", testEnqueueBatchIsAllOrNothing},
	{"EnqueueInCallersTx", testEnqueueInCallersTx},
	{"PayloadBoundsAtEveryEnqueue", testPayloadBoundsAtEveryEnqueue},
	{"EnqueueBatchLargeKeepsPerJobResults", testEnqueueBatchLargeKeepsPerJobResults},
	{"FakeClockIsUsedForTimestamps", testFakeClockIsUsedForTimestamps},
	{"ConcurrentEnqueuesAllLand", testConcurrentEnqueuesAllLand},
	{"EveryProducerProgresses", testEveryProducerProgresses},
	{"AdvanceMovesCursorWithRowsAtomically", testAdvanceMovesCursorWithRowsAtomically},
	{"AdvanceSkipIfActiveRecordsOverlap", testAdvanceSkipIfActiveRecordsOverlap},
	{"PauseIsDurable", testPauseIsDurable},
	{"AdvanceComparesThePause", testAdvanceComparesThePause},
	{"AdvanceBatchIsAdvanceByAdvance", testAdvanceBatchIsAdvanceByAdvance},
	{"AdvanceBatchResultsFollowTheBatch", testAdvanceBatchResultsFollowTheBatch},
	{"ListFiltersNewestFirst", testListFiltersNewestFirst},
	{"SkipsListedAndSummarised", testSkipsListedAndSummarised},
	{"InstantSummarisesFanOut", testInstantSummarisesFanOut},
	{"StatsLookupAndCancel", testStatsLookupAndCancel},
	{"Ping", testPing},
	{"RetryRevivesDeadJobs", testRetryRevivesDeadJobs},
	{"RetryGrantsTheOriginalAttemptsEveryTime", testRetryGrantsTheOriginalAttemptsEveryTime},
	{"RetryRecordsItsInstant", testRetryRecordsItsInstant},
	{"DiscardEndsDeadJobs", testDiscardEndsDeadJobs},
	{"DiscardAllOfASchedule", testDiscardAllOfASchedule},
	{"RetryTakesBackADiscard", testRetryTakesBackADiscard},
	{"DiscardRacesRetry", testDiscardRacesRetry},
	{"ListByPayloadText", testListByPayloadText},
	{"ReclaimReturnsExpiredLeases", testReclaimReturnsExpiredLeases},
	{"ForwardStepTakesNoLiveLease", testForwardStepTakesNoLiveLease},
	{"ClaimDoesNotPrefetchLastAttempts", testClaimDoesNotPrefetchLastAttempts},
	{"ClaimReturnsTheWholeJob", testClaimReturnsTheWholeJob},
	{"ClaimTakesOnlyItsTypes", testClaimTakesOnlyItsTypes},
	{"ClaimTakesOnlyAcceptedVersions", testClaimTakesOnlyAcceptedVersions},
	{"HandlersSeeVersionsWaiting", testHandlersSeeVersionsWaiting},
	{"FinishDoneInGroups", testFinishDoneInGroups},
	{"CancelRequestSurvivesItsPool", testCancelRequestSurvivesItsPool},
	{"SaveConfigLastConfig", testSaveConfigLastConfig},
	{"HeartbeatExtendsTheOwnersLeases", testHeartbeatExtendsTheOwnersLeases},
	{"PresenceDaemonsHandlers", testPresenceDaemonsHandlers},
	{"PresenceRecordsTheConfig", testPresenceRecordsTheConfig},
	{"CancelRequestsReachTheOwner", testCancelRequestsReachTheOwner},
	{"NextWake", testNextWake},
	{"PurgedKeysStayUsed", testPurgedKeysStayUsed},
	{"AdvanceBatchCommitsWinnersOnly", testAdvanceBatchCommitsWinnersOnly},
	{"LastRuns", testLastRuns},
	{"StaleResultOfPurgedJob", testStaleResultOfPurgedJob},
	{"ConcurrentEnqueueDedupAcrossStores", testConcurrentEnqueueDedupAcrossStores},
	{"ConcurrentAdvanceOneWinner", testConcurrentAdvanceOneWinner},
	{"ConcurrentAdvanceBatchOneWinner", testConcurrentAdvanceBatchOneWinner},
	{"ConcurrentClaimsNeverShareAJob", testConcurrentClaimsNeverShareAJob},
	{"FenceAfterReclaim", testFenceAfterReclaim},
	{"ResultsReleaseRetryDeadRetry", testResultsReleaseRetryDeadRetry},
	{"AttemptsInOrder", testAttemptsInOrder},
	{"RequestCancelStates", testRequestCancelStates},
	{"MaintainReports", testMaintainReports},
	{"ListsAndRuns", testListsAndRuns},
	{"AdvancePauseAndSkips", testAdvancePauseAndSkips},
	{"CursorsByName", testCursorsByName},
	{"WatchSeesOtherStores", testWatchSeesOtherStores},
	{"SubscribeSeesOwnCommits", testSubscribeSeesOwnCommits},
	{"WatchSeesOwnCancelRequests", testWatchSeesOwnCancelRequests},
	{"WatchStartsEvenIfCancelled", testWatchStartsEvenIfCancelled},
	{"IDsAreNeverDrawnAgain", testIDsAreNeverDrawnAgain},
	{"RunCountsTheNewestOfTheRun", testRunCountsTheNewestOfTheRun},
	{"RaiseAlarmsOnce", testRaiseAlarmsOnce},
	{"RaiseAlarmsConcurrentOnce", testRaiseAlarmsConcurrentOnce},
	{"AlarmReads", testAlarmReads},
	{"PurgeKeepsOpenAlarms", testPurgeKeepsOpenAlarms},
	{"OpenAlarmsSeeTheirNotifications", testOpenAlarmsSeeTheirNotifications},
	{"NotificationsNameTheirAlarm", testNotificationsNameTheirAlarm},
	{"IncidentGroupsAlarms", testIncidentGroupsAlarms},
	{"IncidentRemindersAndAcknowledge", testIncidentRemindersAndAcknowledge},
	{"IncidentSilence", testIncidentSilence},
	{"IncidentConcurrentOnce", testIncidentConcurrentOnce},
	{"RateLimitHoldsAcrossStores", testRateLimitHoldsAcrossStores},
	{"RateLimitPerKey", testRateLimitPerKey},
	{"RateLimitKeyFails", testRateLimitKeyFails},
	{"FanInFiresOnTheLastEnd", testFanInFiresOnTheLastEnd},
	{"FanInRequireDone", testFanInRequireDone},
	{"FanInManualRunSkip", testFanInManualRunSkip},
	{"FanInCancelledAndReclaimed", testFanInCancelledAndReclaimed},
	{"FanInStaleEndDoesNotCount", testFanInStaleEndDoesNotCount},
	{"FanInRacingFinishers", testFanInRacingFinishers},
	{"FanInSharedMembers", testFanInSharedMembers},
	{"FanInChain", testFanInChain},
	{"FanInSharedRacingFinishers", testFanInSharedRacingFinishers},
	{"EnqueueWithFanIns", testEnqueueWithFanIns},
	{"ActivityAndRunTimings", testActivityAndRunTimings},
	{"ActivityFollowsRows", testActivityFollowsRows},
	{"LiveOutputFencedEndedReplaced", testLiveOutputFencedEndedReplaced},
	{"LiveOutputIsCapped", testLiveOutputIsCapped},
}

// suite is what a test of the suite gets: a way to open stores.
type suite struct {
	openFunc OpenFunc
}

// open opens a fresh store whose clock is a fake one, standing at t0.
func (s *suite) open(t *testing.T) (store.Engine, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	q, _ := s.openFunc(t, clk)
	return q, clk
}

// openTwo opens two stores on one fresh database, as two daemons or nodes
// sharing it, with one fake clock standing at t0.
func (s *suite) openTwo(t *testing.T) (a, b store.Engine, clk *clock.Fake) {
	t.Helper()
	clk = clock.NewFake(t0)
	a, same := s.openFunc(t, clk)
	return a, same(clk), clk
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// failAfter bounds every wait of these tests. Reaching it fails the test;
// it is no claim about speed, and minutes long so that a loaded machine
// passes.
const failAfter = 3 * time.Minute

// waitFor returns the next value from ch, failing the test after a deadline
// that is a failure bound, not a synchronisation point.
func waitFor[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// eventually polls cond until it holds, failing after a deadline. It is for
// effects that have no channel to wait on.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval of a deadline loop, not a sync point
	}
}

func mustEnqueue(t testing.TB, q store.Engine, j store.NewJob) store.Enqueued {
	t.Helper()
	res, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", j, err)
	}
	return res
}

// mustJob returns the job that ref names: by id when ref is a number and
// a job has that id, else by key.
func mustJob(t testing.TB, q store.Engine, ref string) *store.Job {
	t.Helper()
	j, err := jobByRef(context.Background(), q, ref)
	if err != nil {
		t.Fatalf("Job(%s): %v", ref, err)
	}
	return j
}

// jobByRef looks a job up as the command line does: by id when ref is a
// number and a job has that id, else by key.
func jobByRef(ctx context.Context, q store.Engine, ref string) (*store.Job, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		j, err := q.Job(ctx, id)
		if !errors.Is(err, store.ErrNotFound) {
			return j, err
		}
	}
	return q.JobByKey(ctx, ref)
}

// claim takes up to n ready jobs of types for owner in one PoolTx at now,
// leased for lease.
func claim(t testing.TB, q store.Engine, owner string, now time.Time, lease time.Duration, n int, types ...string) []*store.Job {
	t.Helper()
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: owner, Now: now,
		Claim: &store.Claim{Lease: lease, N: n, Types: types}})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return res.Claimed
}

// finishJob claims the job with key, which must be the only ready job of
// its type, and records outcome for it, as a pool would, at now.
func finishJob(t testing.TB, q store.Engine, now time.Time, key string, outcome store.Outcome, errText string) {
	t.Helper()
	j := mustJob(t, q, key)
	js := claim(t, q, "test", now, time.Minute, 1<<10, j.Type)
	if len(js) != 1 || js[0].Key != key {
		t.Fatalf("finish %s: claimed %d jobs, want it alone", key, len(js))
	}
	r := store.Result{Job: js[0], Worker: "test/w0", Outcome: outcome, Error: errText, Started: now, Finished: now, RetryAt: now}
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: "test", Now: now, Results: []store.Result{r}})
	if err != nil || len(res.Fenced) != 1 || !res.Fenced[0] {
		t.Fatalf("finish %s: %+v, %v", key, res, err)
	}
}

// keepAll is the retain of a Maintain that purges nothing a test made:
// the reclaim alone.
const keepAll = 100 * 365 * 24 * time.Hour

// reclaim takes back the expired leases through Maintain, and returns how
// many.
func reclaim(ctx context.Context, q store.Engine) (int, error) {
	rep, err := q.Maintain(ctx, keepAll)
	return rep.Reclaimed, err
}

// purge purges, through Maintain at the store's clock, what ended before
// before, and returns how many jobs and skips it deleted.
func purge(ctx context.Context, q store.Engine, before time.Time) (jobs, skips int64, err error) {
	rep, err := q.Maintain(ctx, q.Clock().Now().Sub(before))
	return rep.Purged, rep.Skips, err
}

// cancelPending cancels the pending job id, as an operator does; a job in
// another state is ErrNotFound.
func cancelPending(ctx context.Context, q store.Engine, id int64) error {
	st, err := q.RequestCancel(ctx, id, "test")
	if err == nil && st != store.StatePending {
		err = fmt.Errorf("cancel job %d: %s, not pending: %w", id, st, store.ErrNotFound)
	}
	return err
}
