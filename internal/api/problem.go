package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
)

// The problem codes: stable, documented in openapi.json.
const (
	codeUnauthorized      = "unauthorized"
	codeForbidden         = "forbidden"
	codeMisdirected       = "misdirected_host"
	codeNotFound          = "not_found"
	codeMethod            = "method_not_allowed"
	codeMediaType         = "unsupported_media_type"
	codeBodyTooLarge      = "body_too_large"
	codeInvalidJSON       = "invalid_json"
	codeJSONTooDeep       = "json_too_deep"
	codeUnknownField      = "unknown_field"
	codeInvalidParameter  = "invalid_parameter"
	codeInvalidID         = "invalid_id"
	codeInvalidPayload    = "invalid_payload"
	codeUnknownSchedule   = "unknown_schedule"
	codeUnknownItem       = "unknown_item"
	codeBackfillRange     = "invalid_range"
	codeJobNotFound       = "job_not_found"
	codeJobState          = "job_state"
	codeIncidentNotFound  = "incident_not_found"
	codeIncidentResolved  = "incident_resolved"
	codeIdempotencyKey    = "idempotency_key_mismatch"
	codeInternal          = "internal"
	problemContentType    = "application/problem+json"
	problemTypePrefix     = "https://scheduler.run/problems/"
	internalProblemDetail = "internal error: the daemon's log says what went wrong"
)

// Problem is an RFC 9457 problem details object.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Code names the problem; it does not change between versions.
	Code string `json:"code"`
	// Have lists what the request could have named: the schedules for an
	// unknown schedule.
	Have []string `json:"have,omitempty"`
}

// problemError is an error a request answers with a Problem.
type problemError struct {
	status int
	code   string
	detail string
	have   []string
}

func (e *problemError) Error() string { return e.detail }

func problemf(status int, code, format string, args ...any) *problemError {
	return &problemError{status: status, code: code, detail: fmt.Sprintf(format, args...)}
}

// asProblem maps err to its problem; an error no rule knows is internal.
func asProblem(err error) (p *problemError, internal bool) {
	if pe, ok := errors.AsType[*problemError](err); ok {
		return pe, false
	}
	switch {
	case errors.Is(err, schedule.ErrUnknownItem):
		return problemf(http.StatusBadRequest, codeUnknownItem, "%v", err), false
	case errors.Is(err, schedule.ErrPayloadSetsItemKey), errors.Is(err, queue.ErrPayloadTooLarge),
		errors.Is(err, queue.ErrPayloadTooDeep), errors.Is(err, queue.ErrPayloadNotJSON):
		return problemf(http.StatusBadRequest, codeInvalidPayload, "%v", err), false
	case errors.Is(err, schedule.ErrBackfillTooLarge):
		return problemf(http.StatusBadRequest, codeBackfillRange, "%v", err), false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return problemf(http.StatusServiceUnavailable, codeInternal, "the request ended before its answer: %v", err), false
	}
	return problemf(http.StatusInternalServerError, codeInternal, internalProblemDetail), true
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *problemError) {
	body, _ := json.Marshal(Problem{Type: problemTypePrefix + p.code, Title: http.StatusText(p.status), Status: p.status,
		Detail: p.detail, Code: p.code, Have: p.have})
	w.Header().Set("Content-Type", problemContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.status)
	w.Write(append(body, '\n'))
}
