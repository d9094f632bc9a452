package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemonServesTheAPI: the daemon serves /api/v1 on its listener, by
// the tokens of its config: a read token reads, an act token triggers, and
// a call without a token is refused.
func TestDaemonServesTheAPI(t *testing.T) {
	t.Parallel()
	readToken, actToken := strings.Repeat("r", 43), strings.Repeat("a", 43)
	hash := func(tok string) string {
		s := sha256.Sum256([]byte(tok))
		return "sha256:" + hex.EncodeToString(s[:])
	}
	dir := setup(t, writableConfig+`
[[api.token]]
name = "reader"
hash = "`+hash(readToken)+`"
[[api.token]]
name = "deployer"
hash = "`+hash(actToken)+`"
access = "act"
`)
	d := runDaemon(t, "-config", filepath.Join(dir, "schedules.toml"), "-http", "127.0.0.1:0")
	if err := d.startOrExit(t); err != nil {
		t.Fatalf("the daemon did not start: %v\n%s", err, d.logs.String())
	}
	m := listenRE.FindStringSubmatch(d.logs.String())
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.logs.String())
	}
	call := func(method, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+m[1]+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/api/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("status without a token: %d %s, want 401", code, body)
	}
	code, body := call("GET", "/api/v1/status", readToken)
	if code != http.StatusOK || !json.Valid([]byte(body)) {
		t.Errorf("status with the read token: %d %s, want 200 and JSON", code, body)
	}
	if code, body := call("POST", "/api/v1/schedules/tick/trigger", readToken); code != http.StatusForbidden {
		t.Errorf("trigger with the read token: %d %s, want 403", code, body)
	}
	if code, body := call("POST", "/api/v1/schedules/tick/trigger", actToken); code != http.StatusCreated {
		t.Errorf("trigger with the act token: %d %s, want 201", code, body)
	}
	eventually(t, "the action logged with the token's name", func() bool {
		return strings.Contains(d.logs.String(), `msg="api action"`) && strings.Contains(d.logs.String(), "deployer")
	})
}
